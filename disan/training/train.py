"""Training as in the paper: Adadelta (lr 0.5), batch 64, dropout, L2 on weight matrices only,
Glorot init, GloVe init with OOV ~ U(-0.05, 0.05), fine-tuned embeddings; model selection on
dev only, early stopping, checkpoints written atomically after every improvement.

:func:`train` reads top to bottom: prepare the data, build the model, then per epoch a pass over
the training set, a dev evaluation and a checkpoint when dev improved; at the end the best
checkpoint is evaluated on test and saved with its model card. The helpers it calls are below it.

The same code trains in one process or, started by torchrun, in several (:mod:`disan.training.distributed`):
each process trains on its share of every global batch, and only the first writes checkpoints, log
lines and TensorBoard event files (:mod:`disan.training.board`).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from disan.data.batching import Encoded, batch_indices, collate, encode, tokens_of
from disan.data.files import FileTask, load_file_task
from disan.data.loaders import TaskData, data_dir, load_task, task_checksums
from disan.data.text import Vocab, normalize
from disan.data.vectors import default_source, description, embedding_matrix, load_glove
from disan.nn import checkpoint
from disan.nn.device import describe
from disan.nn.heads import (
    ModelConfig,
    TextModel,
    count_parameters,
    loss_fn,
    main_metric,
    param_groups,
)
from disan.nn.model import DiSANConfig
from disan.training.board import Board
from disan.training.config import OPTIMIZERS, PROG, TrainConfig
from disan.training.distributed import World
from disan.training.evaluate import evaluate


class TrainingStopped(Exception):
    """The caller asked the run to stop; the best checkpoint so far is kept."""


def train(cfg: TrainConfig, progress: Callable[[dict], None] | None = None,
          should_stop: Callable[[], bool] | None = None, log=None) -> dict:
    """Train, keep the best dev checkpoint in ``cfg.out``, evaluate it on test; return its metrics.

    ``progress(event)`` is called after every step (``{"event": "step", "epoch", "step", "steps", "loss",
    "accuracy", "eta"}``) and every epoch (``{"event": "epoch", **history record, "improved", "model",
    "vocab"}``); ``should_stop()`` is polled between steps: when it returns True the run ends, keeping
    the best checkpoint. One JSON line per epoch goes to ``log`` (default: standard output), and TensorBoard event files to
    ``cfg.logdir``. A loss that is not a number raises FloatingPointError; a run that never wrote a
    checkpoint raises :class:`TrainingStopped` (stopped in the first epoch) or ValueError (no epoch had
    a dev score that is a number); a device that is not there raises ValueError.

    Started by torchrun, every process returns the same metrics; only the first one reports progress
    and writes. ``should_stop`` is for single-process runs (the app's): the processes must not decide alone.
    """
    started = time.time()
    world = World.from_env(cfg.device)
    if cfg.batch_size < world.size:
        raise ValueError(f"the batch size {cfg.batch_size} is the global batch: it must be at least the "
                         f"{world.size} processes")
    # Recorded in the checkpoint's train_config: the processes, and the word vectors the default stands for here.
    cfg = dataclasses.replace(cfg, world_size=world.size, embeddings=cfg.embeddings or default_source())
    if cfg.command:
        cfg.command = cfg.command_line()
    emit = progress if progress and world.is_main else (lambda event: None)
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    rng = random.Random(cfg.seed)  # the same in every process: the same data and the same global batches

    with world.process_group(), Board(cfg, enabled=world.is_main) as board:
        # Data: the task's splits as token ids, a vocabulary and the word vectors to start from.
        prep = prepare_data(cfg, rng)
        # Model and optimiser: the word vectors go into the embedding; L2 on weight matrices only.
        model = build_model(cfg, prep).to(world.device)
        opt = OPTIMIZERS[cfg.optimizer](param_groups(model, cfg.weight_decay), lr=cfg.lr)
        net = world.wrap(model)  # what the steps train: the model, or the model in DistributedDataParallel
        if world.distributed:
            torch.manual_seed(cfg.seed + world.rank)  # the same weights, but not the same dropout masks
        run = RunInfo.of(cfg, prep, model, world)

        history: list[dict] = []
        best_score, best_epoch, epoch, stopped = -math.inf, 0, 0, None
        if cfg.resume:  # the weights, optimiser, random generators and history at the end of the last epoch
            epoch, history, best_score, best_epoch = resume(cfg, model, opt, rng, world)
        try:
            # Early stopping: at most cfg.epochs, and no more than cfg.patience epochs without a dev improvement.
            while epoch < cfg.epochs and not (history and epoch - best_epoch >= cfg.patience):
                epoch += 1
                # One pass over the training set, reporting every step.
                record = {"epoch": epoch, **run_epoch(net, opt, prep, cfg, epoch, rng, emit, should_stop, world)}
                # Dev evaluation: the only data model selection ever sees. The main process evaluates
                # and tells the others, so that every process takes the same decisions below.
                dev = world.from_main(evaluate(model, prep.splits["dev"]) if world.is_main else None)
                record.update({f"dev_{k}": v for k, v in dev.items() if isinstance(v, float)})
                history.append(record)
                if world.is_main:
                    print(json.dumps(record), file=log or sys.stdout, flush=True)  # the stream of the moment
                board.epoch(record, opt.param_groups[0]["lr"], model, prep.vocab)
                # A better dev score is saved at once, so a crash later loses nothing.
                score = selection_metric(prep.data.kind, dev)
                improved = improves(score, best_score)
                if improved:
                    best_score, best_epoch = score, epoch
                    if world.is_main:
                        checkpoint.save(cfg.out, model, prep.vocab, run.meta,
                                        {**run.info, "dev": dev, "best_epoch": epoch, "history": history})
                if world.is_main:  # what --resume continues from
                    save_state(cfg, model, opt, rng, epoch, history, best_score, best_epoch)
                emit({"event": "epoch", **record, "improved": improved, "model": model, "vocab": prep.vocab})
        except TrainingStopped:
            stopped = f"stopped by the user during epoch {epoch}"

        # The best checkpoint, evaluated on dev and test and saved again with its metrics and model card.
        if best_epoch == 0:
            raise no_checkpoint(prep.data.kind, history)
        metrics = world.from_main(
            finish(cfg, prep, run, history, best_epoch, epoch, stopped, started, world) if world.is_main else None)
        board.test(metrics)
        return metrics


# Settings that only say how a run is carried out, or when it stops, and so may differ on --resume.
RESUMABLE_CHANGES = {"epochs", "patience", "threads", "device", "tensorboard", "logdir", "data_dir"}


def state_path(cfg: TrainConfig) -> Path:
    """Where a run keeps what --resume needs: beside the checkpoint folder, which every save replaces.

    The file stays when the run ends, so that a finished run can be resumed with more --epochs or a
    larger --patience (resumed as it was, it just evaluates its best checkpoint again)."""
    out = Path(cfg.out)
    return out.with_name(out.name + ".resume.pt")


def save_state(cfg: TrainConfig, model: TextModel, opt: torch.optim.Optimizer, rng: random.Random, epoch: int,
               history: list[dict], best_score: float, best_epoch: int) -> None:
    """Write the end-of-epoch state atomically: a kill while writing leaves the previous epoch's."""
    path = state_path(cfg)
    state = {"config": settings(cfg), "epoch": epoch, "history": history, "best_score": best_score,
             "best_epoch": best_epoch, "model": model.state_dict(), "optimizer": opt.state_dict(),
             "python_rng": rng.getstate(), "torch_rng": torch.get_rng_state()}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def settings(cfg: TrainConfig) -> dict:
    """The config fields that make a run what it is (all but :data:`RESUMABLE_CHANGES`)."""
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
            if f.compare and f.name not in RESUMABLE_CHANGES}


def resume(cfg: TrainConfig, model: TextModel, opt: torch.optim.Optimizer, rng: random.Random,
           world: World) -> tuple[int, list[dict], float, int]:
    """Restore a run from :func:`state_path`; returns (last finished epoch, history, best score, best epoch).

    Without a state file the run starts from epoch 1 (and says so). A state file of other settings is
    refused with ValueError: continuing it would mix two runs. Loaded with ``weights_only``: no code
    is unpickled.
    """
    path = state_path(cfg)
    if not path.exists():
        if world.is_main:
            print(f"nothing to resume at {path}: starting at epoch 1", file=sys.stderr)
        return 0, [], -math.inf, 0
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a truncated or foreign file: say which and why, whatever torch raised
        raise ValueError(f"cannot resume from {path}: {err}") from None
    # a setting that the state file predates had its default value in that run
    now = settings(cfg)
    saved = {**{f.name: f.default for f in dataclasses.fields(cfg) if f.name in now}, **state["config"]}
    differ = sorted(k for k, v in now.items() if saved.get(k) != v)
    if differ:
        raise ValueError(f"cannot resume from {path}: it was trained with other settings ("
                         + ", ".join(f"{k}={saved.get(k)!r}, not {getattr(cfg, k)!r}" for k in differ)
                         + "); resume with the same settings or choose another --out")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    rng.setstate(state["python_rng"])
    torch.set_rng_state(state["torch_rng"])
    if world.distributed:  # the saved generator is the first process's; the others must keep their own masks
        torch.manual_seed(cfg.seed + world.rank + 104_729 * state["epoch"])
    if world.is_main:
        print(f"resuming after epoch {state['epoch']} (best dev so far: epoch {state['best_epoch']})",
              file=sys.stderr)
    return state["epoch"], state["history"], state["best_score"], state["best_epoch"]


@dataclass
class Prepared:
    """A task ready to train on: its examples, vocabulary, encoded splits and initial word vectors."""
    data: TaskData
    vocab: Vocab
    splits: dict[str, Encoded]   # train, dev, test
    vectors: np.ndarray          # (len(vocab), d_e): GloVe rows, U(-0.05, 0.05) for words GloVe lacks
    glove_found: int             # vocabulary words that have a GloVe vector
    frozen: int                  # the last vocabulary words, which only GloVe provides: fixed rows


def prepare_data(cfg: TrainConfig, rng: random.Random) -> Prepared:
    """Load the task (capped at ``cfg.max_train`` training examples), tokenise it, build the
    vocabulary and its initial word vectors, and encode every split."""
    if cfg.data:  # ---- your own data: --data replaces --task (disan.data.files)
        data = load_file_task(cfg.data, cfg.text_column, cfg.label_column, cfg.text_b_column, cfg.kind, cfg.dev,
                              cfg.test, cfg.dev_fraction, cfg.test_fraction, cfg.seed)
    else:
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
    vocab, frozen = build_vocab(cfg, train_tokens, words)
    emb, found = embedding_matrix(vocab, words, vectors, seed=cfg.seed)
    splits = {s: encode(vocab, toks[s], [e.label for e in getattr(data, s)]) for s in toks}
    return Prepared(data, vocab, splits, emb, found, frozen)


def build_vocab(cfg: TrainConfig, train_tokens: list, words: list[str]) -> tuple[Vocab, int]:
    """(vocabulary, how many of its last words are frozen): the training words, then those of the
    ``cfg.extra_vocab`` most frequent GloVe words (GloVe files are sorted by frequency) that training
    lacks. Training never sees the latter, so their vectors stay the pre-trained ones."""
    trained = Vocab.build(train_tokens)
    vocab = trained.extended(words[: cfg.extra_vocab])
    return vocab, len(vocab) - len(trained)


def build_model(cfg: TrainConfig, prep: Prepared) -> TextModel:
    """The task's model (Glorot-initialised) with the prepared word vectors in its embedding."""
    ecfg = DiSANConfig(d_e=prep.vectors.shape[1], d_h=cfg.d_h, activation=cfg.activation, dropout=cfg.dropout)
    model = TextModel(ModelConfig(vocab_size=len(prep.vocab), n_classes=len(prep.data.labels), kind=prep.data.kind,
                                  encoder=cfg.encoder, d_fc=cfg.d_fc, encoder_cfg=ecfg, frozen_vocab=prep.frozen))
    model.embed.set_vectors(torch.from_numpy(prep.vectors))
    return model


@dataclass
class RunInfo:
    """What every checkpoint of the run records: ``meta`` goes into its config, ``info`` into its metrics."""
    meta: dict
    info: dict
    n_params: int   # without the embeddings, as the paper counts

    @classmethod
    def of(cls, cfg: TrainConfig, prep: Prepared, model: TextModel, world: World) -> RunInfo:
        """The run's facts from its configuration, data, model and processes."""
        n_params = count_parameters(model) - count_parameters(model.embed)
        data = prep.data
        meta = {"task": data.name, "kind": data.kind, "labels": data.labels, "train_config": asdict(cfg),
                "n_params": n_params}
        if isinstance(data, FileTask):  # its files, columns and split rows, to read the same splits again
            meta["data"] = data.source
        info = {"n_train": len(data.train), "vocab": len(prep.vocab), "glove_found": prep.glove_found,
                "frozen_vocab": prep.frozen,
                "n_params": n_params,
                "machine": machine(world)}
        return cls(meta, info, n_params)


def machine(world: World) -> str:
    """What the run trained on, for the metrics and the model card."""
    processes = f" × {world.size} processes" if world.distributed else ""
    return (f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
            f"{describe(world.device)}{processes}")


def run_epoch(net: torch.nn.Module, opt: torch.optim.Optimizer, prep: Prepared, cfg: TrainConfig, epoch: int,
              rng: random.Random, emit: Callable[[dict], None], should_stop: Callable[[], bool] | None,
              world: World) -> dict:
    """One shuffled pass over the training set: its mean loss, its accuracy (not for relatedness) and duration.

    Every process draws the same global batches of ``cfg.batch_size`` and trains on its share of each;
    a last batch smaller than the number of processes (at most N - 1 examples) is left out by all, so
    that every process takes the same steps. Loss and accuracy are over all processes' examples. Emits
    a step event (this process's figures so far) after every step; raises :class:`TrainingStopped`
    when ``should_stop()`` says so.
    """
    net.train()
    kind, train_split = prep.data.kind, prep.splits["train"]
    chunks = [b for b in batch_indices(train_split, cfg.batch_size, True, rng) if len(b) >= world.size]
    steps = len(chunks)
    t0, seen, loss_sum, correct = time.time(), 0, 0.0, 0
    for step, chunk in enumerate(chunks, 1):
        if should_stop and should_stop():
            raise TrainingStopped()
        idx = world.share(chunk)
        ids, labels = collate(train_split, idx)
        try:
            loss, right = train_step(net, opt, kind, ids, labels, world, len(idx) * world.size / len(chunk))
        except FloatingPointError as e:
            raise FloatingPointError(f"{e} at epoch {epoch}, step {step}; try a smaller learning rate") from None
        seen += len(labels)
        loss_sum += loss * len(labels)
        correct += right
        elapsed = time.time() - t0
        emit({"event": "step", "epoch": epoch, "step": step, "steps": steps, "loss": loss_sum / seen,
              "accuracy": correct / seen if kind != "relatedness" else None,
              "eta": elapsed / step * (steps - step)})
    loss_sum, seen, correct = world.sum([loss_sum, seen, correct])
    out = {"train_loss": loss_sum / seen}
    if kind != "relatedness":
        out["train_accuracy"] = correct / seen
    return {**out, "epoch_seconds": time.time() - t0}


def train_step(net: torch.nn.Module, opt: torch.optim.Optimizer, kind: str, ids: list[torch.Tensor],
               labels: list, world: World, weight: float = 1.0) -> tuple[float, int]:
    """One optimiser step on this process's share of a batch, on the world's device: (the share's
    mean loss, its correct predictions; 0 for relatedness).

    ``weight`` is the share's size times the number of processes over the global batch's size: the
    gradient of the weighted loss, averaged over the processes by DistributedDataParallel, is the
    gradient of the global batch's mean loss even when the shares differ in size (1 in one process).
    Raises FloatingPointError before the step, in every process, when a loss is not a finite number.
    """
    y = targets(kind, labels).to(world.device)
    logits = net(*(x.to(world.device) for x in ids))
    loss = loss_fn(kind, logits, y)
    finite = bool(torch.isfinite(loss))
    if not world.all_true(finite):
        raise FloatingPointError(f"the loss became {loss.item() if not finite else 'not a number in another process'}")
    opt.zero_grad(set_to_none=True)
    (loss * weight).backward()
    opt.step()
    right = int((logits.argmax(-1) == y).sum()) if kind != "relatedness" else 0
    return loss.item(), right


def targets(kind: str, labels: list) -> torch.Tensor:
    """Labels as the loss takes them: float scores for relatedness, class indices otherwise."""
    return torch.tensor(labels, dtype=torch.float32 if kind == "relatedness" else torch.long)


def selection_metric(kind: str, metrics: dict) -> float:
    """The dev figure that selects the model (:func:`disan.nn.heads.main_metric`)."""
    return metrics[main_metric(kind)]


def improves(score: float, best: float) -> bool:
    """Whether a dev score beats the best so far. NaN never does: a relatedness model that predicts
    one score for every pair has no Pearson r, and must not replace a checkpoint that has one."""
    return not math.isnan(score) and score > best


def no_checkpoint(kind: str, history: list[dict]) -> Exception:
    """The error of a run that ended without writing a checkpoint, saying why."""
    if not history:
        return TrainingStopped("stopped before the first epoch ended: no checkpoint was written")
    metric = main_metric(kind)
    why = ("a model that predicts the same score for every dev pair has no Pearson r" if metric == "pearson"
           else "is the dev split empty?")
    return ValueError(f"no checkpoint was written: the dev {metric} was not a number in any of the "
                      f"{len(history)} epochs ({why}); try another learning rate or more training examples")


def finish(cfg: TrainConfig, prep: Prepared, run: RunInfo, history: list[dict], best_epoch: int, epochs_run: int,
           stopped: str | None, started: float, world: World) -> dict:
    """Reload the best checkpoint on the world's device, evaluate it on dev and test, and save it
    again with these metrics and its model card; returns the metrics."""
    model, _, _, _ = checkpoint.load(cfg.out, device=world.device)
    metrics = {**run.info, "dev": evaluate(model, prep.splits["dev"]), "test": evaluate(model, prep.splits["test"]),
               "best_epoch": best_epoch, "epochs_run": epochs_run, "history": history, "stopped": stopped,
               "train_seconds": time.time() - started}
    metrics["data_sha256"] = (prep.data.checksums() if isinstance(prep.data, FileTask)
                              else task_checksums(prep.data.name, data_dir(cfg.data_dir)))
    checkpoint.save(cfg.out, model, prep.vocab, run.meta, metrics, model_card(cfg, prep.data, metrics, run.n_params))
    return metrics


def model_card(cfg: TrainConfig, data: TaskData, metrics: dict, n_params: int) -> str:
    """The checkpoint's README.md: task, protocol, settings, figures, data checksums and the command that made it."""
    dev, test = metrics.get("dev", {}), metrics.get("test", {})
    lines = [f"# {data.name} · {cfg.encoder}", "",
             f"- task: {data.name} ({data.kind}, {len(data.labels)} {'levels' if data.kind == 'relatedness' else 'classes'}: "
             f"{', '.join(data.labels)})",
             f"- protocol: {data.protocol}",
             f"- training examples: {metrics.get('n_train')}; dev: {len(data.dev)}; test: {len(data.test)}",
             f"- encoder: {cfg.encoder}, d_h = {cfg.d_h}, {cfg.activation}, dropout {cfg.dropout}, "
             f"{cfg.optimizer} lr {cfg.lr}, batch {cfg.batch_size}, L2 {cfg.weight_decay}",
             f"- word vectors: {description(cfg.embeddings)}; {metrics.get('glove_found')} of the "
             f"{metrics.get('vocab')} vocabulary words have one, {metrics.get('frozen_vocab', 0)} of them kept frozen",
             f"- parameters: {n_params:,} (without embeddings)",
             f"- best epoch: {metrics.get('best_epoch')} of {metrics.get('epochs_run')}; "
             f"training time {metrics.get('train_seconds', 0):.0f} s on {metrics.get('machine')}",
             f"- dev: {json.dumps({k: round(v, 4) for k, v in dev.items() if isinstance(v, float)})}",
             f"- test: {json.dumps({k: round(v, 4) for k, v in test.items() if isinstance(v, float)})}",
             f"- data checksums: {json.dumps(metrics.get('data_sha256', {}))}",
             "", "Reproduce:", "", f"    {reproduce(cfg)}", ""]
    return "\n".join(lines)


def reproduce(cfg: TrainConfig) -> str:
    """The command that made the run: the same flags, started by torchrun when it had several processes."""
    line = cfg.command or cfg.command_line()
    if cfg.world_size > 1:
        line = f"torchrun --nproc_per_node {cfg.world_size} -m disan train{line[len(PROG):]}"
    return line


