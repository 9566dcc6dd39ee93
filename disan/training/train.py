"""Training as in the paper: Adadelta (lr 0.5), batch 64, dropout, L2 on weight matrices only,
Glorot init, GloVe init with OOV ~ U(-0.05, 0.05), fine-tuned embeddings; model selection on
dev only, early stopping, checkpoints written atomically after every improvement. ``--recipe authors``
(:data:`~disan.training.config.RECIPES`) follows the authors' SST code instead, item by item.

:func:`train` reads top to bottom: prepare the data, build the model, then per period (a pass over
the training set, or ``--eval-every`` steps) the steps, a dev evaluation and a checkpoint when dev
improved; at the end the best checkpoint is evaluated on test and saved with its model card. The
helpers it calls are below it.

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
from disan.data.kinds import Kind, kind_of
from disan.data.loaders import Example, TaskData, data_dir
from disan.data.registry import BENCHMARKS, load_task, task_checksums
from disan.data.text import Vocab, normalize
from disan.data.vectors import (
    default_source,
    description,
    embedding_matrix,
    fingerprint,
    load_glove,
)
from disan.nn import checkpoint, kernels
from disan.nn.device import describe
from disan.nn.heads import ModelConfig, TextModel, paper_parameters, param_groups
from disan.nn.model import DiSANConfig
from disan.training.board import Board
from disan.training.config import (
    OPTIMIZERS,
    PROG,
    RECIPE_ITEMS,
    TrainConfig,
    recipe_items,
)
from disan.training.distributed import World
from disan.training.evaluate import evaluate

# The first steps of an epoch allocate memory and warm caches (the first of a run also builds kernels),
# so the time left is estimated from the pace of the steps after them.
WARMUP_STEPS = 3


class TrainingStopped(Exception):
    """The caller asked the run to stop; the best checkpoint so far is kept."""


def train(cfg: TrainConfig, progress: Callable[[dict], None] | None = None,
          should_stop: Callable[[], bool] | None = None, log=None) -> dict:
    """Train, keep the best dev checkpoint in ``cfg.out``, evaluate it on test; return its metrics.

    ``progress(event)`` is called after every step (``{"event": "step", "epoch", "step", "steps", "loss",
    "accuracy", "eta", "done", "budget"}``: step and steps counted within the period, done and budget
    within the run; ``eta``: the seconds left in the period at the pace of the steps after the first
    :data:`WARMUP_STEPS`, None until then) and every dev evaluation (``{"event": "epoch", **history record, "improved",
    "model", "vocab"}``); ``should_stop()`` is polled between steps: when it returns True the run ends,
    keeping the best checkpoint. One JSON line per evaluation goes to ``log`` (default: standard
    output), and TensorBoard event
    files to ``cfg.logdir``. A loss that is not a number raises FloatingPointError; a run that never
    wrote a checkpoint raises :class:`TrainingStopped` (stopped before the first dev evaluation) or
    ValueError (no evaluation had a dev score that is a number); a device that is not there raises
    ValueError.

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
        kernels.resolve("auto", next(model.parameters()), wait=True)  # one path for every step, not a switch midway
        opt = make_optimizer(cfg, model)
        net = world.wrap(model)  # what the steps train: the model, or the model in DistributedDataParallel
        if world.distributed:
            torch.manual_seed(cfg.seed + world.rank)  # the same weights, but not the same dropout masks
        run = RunInfo.of(cfg, prep, model, world)

        # The training batches, round after round (a round is an epoch); the budget and the evaluation period.
        stream = BatchStream(prep.splits["train"], cfg.batch_size, world.size, rng, cfg.batching)
        budget = cfg.steps or cfg.epochs * stream.per_round
        period = cfg.eval_every or stream.per_round
        history: list[dict] = []
        best_score, best, step, stopped = -math.inf, 0, 0, None  # best: 1-based index of the best record
        if cfg.resume:  # the weights, optimiser, batches, random generators and history at the last evaluation
            step, history, best_score, best, spent = resume(cfg, model, opt, stream, world,
                                                            run.info["data_sha256"])
            started -= spent  # the run's time counts the sessions before this one
        try:
            # Early stopping: no more than cfg.patience evaluations without a dev improvement (0: never).
            while step < budget and not (cfg.patience and history and len(history) - best >= cfg.patience):
                # The steps of one period, reporting every step.
                steps = min(period, budget - step)
                trained = run_steps(net, opt, prep, cfg, stream, steps, emit, should_stop, world, (step, budget))
                step += steps
                record = {"epoch": stream.round, **trained}
                if cfg.eval_every:  # periods of steps: where the evaluation stands, and the period's duration
                    record.update(step=step, seconds=record.pop("epoch_seconds"))
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
                    best_score, best = score, len(history)
                    if world.is_main:  # a checkpoint of a run still training: no test figure yet, and its card says so
                        so_far = {**run.info, "dev": dev, **best_of(history, best), "history": history,
                                  "train_seconds": time.time() - started}
                        checkpoint.save(cfg.out, model, prep.vocab, run.meta, so_far,
                                        model_card(cfg, prep.data, so_far, run.n_params))
                if world.is_main:  # what --resume continues from
                    save_state(cfg, model, opt, stream, step, history, best_score, best, time.time() - started,
                               run.info["data_sha256"])
                emit({"event": "epoch", **record, "improved": improved, "model": model, "vocab": prep.vocab})
        except TrainingStopped:
            stopped = (f"stopped by the user during epoch {stream.round}"
                       + (f", after the evaluation at step {step}" if cfg.eval_every else ""))

        # The best checkpoint, evaluated on dev and test and saved again with its metrics and model card.
        if best == 0:
            raise no_checkpoint(prep.data.kind, history)
        metrics = world.from_main(
            finish(cfg, prep, run, history, best, stream.round, step, stopped, started, world) if world.is_main
            else None)
        board.test(metrics)
        if world.is_main and not cfg.keep_state and not stopped:  # a stopped run keeps it, to be resumed
            state_path(cfg).unlink(missing_ok=True)
        return metrics


# Settings that only say how a run is carried out, or when it stops, and so may differ on --resume.
RESUMABLE_CHANGES = {"epochs", "steps", "patience", "threads", "device", "tensorboard", "logdir", "data_dir"}


def make_optimizer(cfg: TrainConfig, model: TextModel) -> torch.optim.Optimizer:
    """The optimiser of ``cfg`` on the model's parameter groups (L2 on weight matrices only; with
    ``--no-decay-attention`` not on W1 and W2 either); Adadelta with ``cfg.rho`` and ``cfg.eps``."""
    groups = param_groups(model, cfg.weight_decay, attention=cfg.decay_attention)
    constants = {"rho": cfg.rho, "eps": cfg.eps} if cfg.optimizer == "adadelta" else {}
    return getattr(torch.optim, OPTIMIZERS[cfg.optimizer])(groups, lr=cfg.lr, **constants)


def best_of(history: list[dict], best: int) -> dict:
    """Where the best evaluation (1-based index ``best`` into ``history``) stands: its epoch, and its step
    when the run evaluates every so many steps."""
    record = history[best - 1]
    return {"best_epoch": record["epoch"], **({"best_step": record["step"]} if "step" in record else {})}


class BatchStream:
    """The training batches, one shuffled round (epoch) after another, that can stop and go on at any step.

    Each round's batches are drawn from ``rng`` when its first batch is asked for. Its state (the round,
    the batches of it already given, and ``rng``'s state when the round was drawn) is enough to draw
    the same round again and go on where it stopped. Batches smaller than ``min_size`` (the number of
    processes) are left out, so that every process takes the same steps.
    """

    def __init__(self, data: Encoded, batch_size: int, min_size: int, rng: random.Random, batching: str = "bucketed"):
        self.data, self.batch_size, self.min_size, self.rng = data, batch_size, min_size, rng
        self.batching = batching  # of disan.data.batching.BATCHINGS
        self.round, self.offset, self.chunks, self.drawn_from = 0, 0, [], None
        last = len(data) % batch_size
        self.per_round = len(data) // batch_size + (last >= min_size and last > 0)  # steps per round

    def _draw(self) -> None:
        self.drawn_from = self.rng.getstate()
        self.chunks = [b for b in batch_indices(self.data, self.batch_size, True, self.rng, self.batching)
                       if len(b) >= self.min_size]

    def next(self) -> list[int]:
        """The example indices of the next batch, starting a new round when this one is used up."""
        if self.offset == len(self.chunks):
            self.round, self.offset = self.round + 1, 0
            self._draw()
        self.offset += 1
        return self.chunks[self.offset - 1]

    def state(self) -> dict:
        """What :meth:`restore` needs to go on from here."""
        return {"round": self.round, "offset": self.offset, "rng": self.drawn_from}

    def restore(self, state: dict) -> None:
        """Go on from a :meth:`state`: the same round drawn again, its used batches skipped."""
        self.rng.setstate(state["rng"])
        self.round, self.offset = state["round"], state["offset"]
        self._draw()


def state_path(cfg: TrainConfig) -> Path:
    """Where a run keeps what --resume needs: beside the checkpoint folder, which every save replaces.

    The file stays when the run ends (when it finishes, unless ``keep_state`` is off), so that a finished run can be resumed
    with more --epochs or a larger --patience (resumed as it was, it just evaluates its best checkpoint again)."""
    out = Path(cfg.out)
    return out.with_name(out.name + ".resume.pt")


def save_state(cfg: TrainConfig, model: TextModel, opt: torch.optim.Optimizer, stream: BatchStream, step: int,
               history: list[dict], best_score: float, best: int, seconds: float,
               data_sha256: dict[str, str]) -> None:
    """Write the state at an evaluation atomically: a kill while writing leaves the previous evaluation's.
    ``seconds``: the run's time so far, every session together; ``data_sha256``: {data file: SHA-256}."""
    path = state_path(cfg)
    state = {"config": settings(cfg), "step": step, "history": history, "best_score": best_score,
             "best": best, "seconds": seconds, "model": model.state_dict(), "optimizer": opt.state_dict(),
             "batches": stream.state(), "torch_rng": torch.get_rng_state(), "data_sha256": data_sha256}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def settings(cfg: TrainConfig) -> dict:
    """The config fields that make a run what it is (all but :data:`RESUMABLE_CHANGES`)."""
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
            if f.compare and f.name not in RESUMABLE_CHANGES}


def resume(cfg: TrainConfig, model: TextModel, opt: torch.optim.Optimizer, stream: BatchStream,
           world: World, data_sha256: dict[str, str]) -> tuple[int, list[dict], float, int, float]:
    """Restore a run from :func:`state_path`; returns (steps done, history, best score, index of the best
    record (1-based), seconds the run took so far).

    Without a state file the run starts from step 0 (and says so). A state file of other settings is
    refused with ValueError: continuing it would mix two runs; a setting the state file does not
    name (one added since) counts as its default. So is a state file whose data files (``data_sha256``,
    {file name: SHA-256}) have changed since. Loaded with ``weights_only``: no code is unpickled.
    """
    path = state_path(cfg)
    if not path.exists():
        if world.is_main:
            print(f"nothing to resume at {path}: starting at step 0", file=sys.stderr)
        return 0, [], -math.inf, 0, 0.0
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
    changed = sorted(name for name, digest in state.get("data_sha256", {}).items()
                     if data_sha256.get(name) != digest)
    if changed:
        raise ValueError(f"cannot resume from {path}: {', '.join(changed)} changed since the run began (its SHA-256 "
                         f"differs); resume on the same data or choose another --out")
    if "batches" not in state:
        raise ValueError(f"cannot resume from {path}: it was written by an earlier version, which saved "
                         f"the end of an epoch only; start the run afresh (without --resume, or another --out)")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    stream.restore(state["batches"])
    step, best = state["step"], state["best"]
    torch.set_rng_state(state["torch_rng"])
    if world.distributed:  # the saved generator is the first process's; the others must keep their own masks
        torch.manual_seed(cfg.seed + world.rank + 104_729 * step)
    if world.is_main:
        print(f"resuming at step {step}, epoch {stream.round} (best dev so far: evaluation {best} of "
              f"{len(state['history'])})", file=sys.stderr)
    return step, state["history"], state["best_score"], best, state.get("seconds", 0.0)


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
        data = load_task(cfg.task, cfg.data_dir, fold=cfg.fold, seed=cfg.seed, phrases=cfg.phrases,
                         nodes=cfg.sst_nodes)
    if not data.train:
        raise ValueError(f"{cfg.task} has no training split here; it can only be evaluated")
    if cfg.max_train and len(data.train) > cfg.max_train:
        data.train = rng.sample(data.train, cfg.max_train)
    if cfg.shuffle_labels:
        data.train = shuffled_labels(data.train, cfg.seed)
    toks = tokens_of(data, tokenizer=cfg.tokens)
    train_tokens = [t for row in toks["train"] for t in row]
    wanted = {normalize(t) for tokens in train_tokens for t in tokens}
    # with --eval-words, every dev and test word that GloVe has gets its vector, as the authors' code
    # knows every GloVe word at test time: the predictions are those of the whole of GloVe
    eval_words = ({normalize(t) for s in ("dev", "test") for row in toks[s] for tokens in row for t in tokens} - wanted
                  if cfg.eval_words else set())
    # only the vectors the vocabulary can use: what makes a 5 GB 840B file loadable
    words, vectors = load_glove(cfg.embeddings, vocab_filter=wanted | eval_words, keep_first=cfg.extra_vocab)
    vocab, frozen = build_vocab(cfg, train_tokens, words, eval_words)
    emb, found = embedding_matrix(vocab, words, vectors, seed=cfg.seed, oov=cfg.oov_init)
    splits = {s: encode(vocab, toks[s], [e.label for e in getattr(data, s)]) for s in toks}
    return Prepared(data, vocab, splits, emb, found, frozen)


def shuffled_labels(examples: list[Example], seed: int) -> list[Example]:
    """The examples with their labels permuted at random by ``seed`` (Adebayo et al. 2018's data randomisation):
    the same texts and the same labels, no longer belonging together. Its own generator, so that the rest
    of the run draws what it would draw without it."""
    labels = [e.label for e in examples]
    random.Random(seed).shuffle(labels)
    return [dataclasses.replace(e, label=y) for e, y in zip(examples, labels)]


def build_vocab(cfg: TrainConfig, train_tokens: list, words: list[str],
                eval_words: set[str] = frozenset()) -> tuple[Vocab, int]:
    """(vocabulary, how many of its last words are frozen): the training words, then those of the
    ``cfg.extra_vocab`` most frequent GloVe words (GloVe files are sorted by frequency) that training
    lacks, then the GloVe words among ``eval_words``. Training never sees the latter two, so their
    vectors stay the pre-trained ones."""
    trained = Vocab.build(train_tokens)
    vocab = trained.extended(words[: cfg.extra_vocab]).extended(w for w in words if normalize(w) in eval_words)
    return vocab, len(vocab) - len(trained)


def build_model(cfg: TrainConfig, prep: Prepared) -> TextModel:
    """The task's model (Glorot-initialised) with the prepared word vectors in its embedding."""
    ecfg = DiSANConfig(d_e=prep.vectors.shape[1], d_h=cfg.d_h, activation=cfg.activation, dropout=cfg.dropout)
    model = TextModel(ModelConfig(vocab_size=len(prep.vocab), n_classes=len(prep.data.labels), kind=prep.data.kind,
                                  encoder=cfg.encoder, d_fc=cfg.d_fc, encoder_cfg=ecfg, frozen_vocab=prep.frozen,
                                  out_bias=cfg.head_bias))
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
        n_params = paper_parameters(model)
        data = prep.data
        # the vectors' files, by SHA-256: a loaded model can then know every word of these same vectors
        meta = {"task": data.name, "kind": data.kind, "labels": data.labels, "train_config": asdict(cfg),
                "n_params": n_params, "vectors": {"source": cfg.embeddings, "sha256": fingerprint(cfg.embeddings)}}
        if isinstance(data, FileTask):  # its files, columns and split rows, to read the same splits again
            meta["data"] = data.source
        info = {"n_train": len(data.train), "vocab": len(prep.vocab), "glove_found": prep.glove_found,
                "frozen_vocab": prep.frozen,
                "n_params": n_params,
                "machine": machine(world),
                # the data files, by SHA-256: the model card names them, and a resume refuses changed ones
                "data_sha256": (data.checksums() if isinstance(data, FileTask)
                                else task_checksums(data.name, data_dir(cfg.data_dir)))}
        return cls(meta, info, n_params)


def machine(world: World) -> str:
    """What the run trained on, for the metrics and the model card."""
    processes = f" × {world.size} processes" if world.distributed else ""
    threads = torch.get_num_threads()
    return (f"{platform.machine()}, {threads} thread{'s' if threads != 1 else ''}, torch {torch.__version__}, "
            f"{describe(world.device)}{processes}")


def run_steps(net: torch.nn.Module, opt: torch.optim.Optimizer, prep: Prepared, cfg: TrainConfig, stream: BatchStream,
              steps: int, emit: Callable[[dict], None], should_stop: Callable[[], bool] | None, world: World,
              run: tuple[int, int]) -> dict:
    """``steps`` batches of the stream: their mean loss, accuracy (not for relatedness) and duration.

    Every process draws the same global batches of ``cfg.batch_size`` and trains on its share of each.
    Loss and accuracy are over all processes' examples. Emits a step event (this process's figures so
    far; ``done`` and ``budget``, the run's steps before this one and in all, from ``run``) after every
    step; raises :class:`TrainingStopped` when ``should_stop()`` says so.
    """
    before, budget = run
    net.train()
    kind, train_split = kind_of(prep.data.kind), prep.splits["train"]
    t0, seen, loss_sum, correct = time.time(), 0, 0.0, 0
    warm = t0  # the end of the warm-up steps, whose pace (allocation, first kernels) says little about the rest
    for step in range(1, steps + 1):
        if should_stop and should_stop():
            raise TrainingStopped()
        chunk = stream.next()
        idx = world.share(chunk)
        ids, labels = collate(train_split, idx)
        try:
            loss, right = train_step(net, opt, kind, ids, labels, world, len(idx) * world.size / len(chunk))
        except FloatingPointError as e:
            raise FloatingPointError(f"{e} at epoch {stream.round}, step {step}; try a smaller learning rate") from None
        seen += len(labels)
        loss_sum += loss * len(labels)
        correct += right
        now = time.time()
        if step == WARMUP_STEPS:
            warm = now
        eta = ((now - warm) / (step - WARMUP_STEPS) * (steps - step) if step > WARMUP_STEPS
               else 0.0 if step == steps else None)
        emit({"event": "step", "epoch": stream.round, "step": step, "steps": steps, "loss": loss_sum / seen,
              "accuracy": None if kind.scored else correct / seen,
              "eta": eta, "done": before + step, "budget": budget})
    loss_sum, seen, correct = world.sum([loss_sum, seen, correct])
    out = {"train_loss": loss_sum / seen}
    if not kind.scored:
        out["train_accuracy"] = correct / seen
    return {**out, "epoch_seconds": time.time() - t0}


def train_step(net: torch.nn.Module, opt: torch.optim.Optimizer, kind: Kind, ids: list[torch.Tensor],
               labels: list, world: World, weight: float = 1.0) -> tuple[float, int]:
    """One optimiser step on this process's share of a batch, on the world's device: (the share's
    mean loss, its correct predictions; 0 for relatedness).

    ``weight`` is the share's size times the number of processes over the global batch's size: the
    gradient of the weighted loss, averaged over the processes by DistributedDataParallel, is the
    gradient of the global batch's mean loss even when the shares differ in size (1 in one process).
    Raises FloatingPointError before the step, in every process, when a loss is not a finite number.
    """
    y = kind.targets(labels).to(world.device)
    logits = net(*(x.to(world.device) for x in ids))
    loss = kind.loss(logits, y)
    finite = bool(torch.isfinite(loss))
    if not world.all_true(finite):
        raise FloatingPointError(f"the loss became {loss.item() if not finite else 'not a number in another process'}")
    opt.zero_grad(set_to_none=True)
    (loss * weight).backward()
    opt.step()
    right = 0 if kind.scored else int((kind.read(logits) == y).sum())
    return loss.item(), right


def selection_metric(kind: str, metrics: dict) -> float:
    """The dev figure that selects the model: its kind's metric (:data:`disan.data.kinds.KINDS`)."""
    return metrics[kind_of(kind).metric]


def improves(score: float, best: float) -> bool:
    """Whether a dev score beats the best so far. NaN never does: a relatedness model that predicts
    one score for every pair has no Pearson r, and must not replace a checkpoint that has one."""
    return not math.isnan(score) and score > best


def no_checkpoint(kind: str, history: list[dict]) -> Exception:
    """The error of a run that ended without writing a checkpoint, saying why."""
    if not history:
        return TrainingStopped("stopped before the first dev evaluation: no checkpoint was written")
    metric = kind_of(kind).metric
    why = ("a model that predicts the same score for every dev pair has no Pearson r" if metric == "pearson"
           else "is the dev split empty?")
    return ValueError(f"no checkpoint was written: the dev {metric} was not a number in any of the "
                      f"{len(history)} epochs ({why}); try another learning rate or more training examples")


def finish(cfg: TrainConfig, prep: Prepared, run: RunInfo, history: list[dict], best: int, epochs_run: int,
           steps_run: int, stopped: str | None, started: float, world: World) -> dict:
    """Reload the best checkpoint on the world's device, evaluate it on dev and test, and save it
    again with these metrics and its model card; returns the metrics."""
    model, _, _, _ = checkpoint.load(cfg.out, device=world.device, vocabulary="stored")  # the words dev saw
    metrics = {**run.info, "dev": evaluate(model, prep.splits["dev"]), "test": evaluate(model, prep.splits["test"]),
               **best_of(history, best), "epochs_run": epochs_run, "steps_run": steps_run, "history": history,
               "stopped": stopped, "train_seconds": time.time() - started}
    checkpoint.save(cfg.out, model, prep.vocab, run.meta, metrics, model_card(cfg, prep.data, metrics, run.n_params))
    return metrics


def model_card(cfg: TrainConfig, data: TaskData, metrics: dict, n_params: int) -> str:
    """The checkpoint's README.md: task, protocol, settings, figures, data checksums and the command that made it."""
    adadelta = f" (rho {cfg.rho}, eps {cfg.eps})" if cfg.optimizer == "adadelta" else ""
    followed = recipe_items(cfg)
    recipe = (f"items {', '.join(map(str, followed))} of {len(RECIPE_ITEMS)} ("
              + "; ".join(what for item, what, _ in RECIPE_ITEMS if item in followed) + ")") if followed else "none"
    lines = [f"# {data.name} · {cfg.encoder}", "",
             f"- task: {data.name} ({data.kind}, {len(data.labels)} {'levels' if kind_of(data.kind).scored else 'classes'}: "
             f"{', '.join(data.labels)})",
             f"- protocol: {data.protocol}",
             f"- training examples: {metrics.get('n_train')}; dev: {len(data.dev)}; test: {len(data.test)}",
             f"- encoder: {cfg.encoder}, d_h = {cfg.d_h}, {cfg.activation}, dropout {cfg.dropout}, "
             f"{cfg.optimizer} lr {cfg.lr}{adadelta}, batch {cfg.batch_size}, L2 {cfg.weight_decay}"
             f"{'' if cfg.decay_attention else ' (not on W1, W2)'}{'' if cfg.head_bias else ', no logit bias'}",
             f"- tokens: {cfg.tokens}; OOV rows: {cfg.oov_init}"
             + (f"; SST nodes: {cfg.sst_nodes}" if cfg.task in BENCHMARKS and BENCHMARKS[cfg.task].sst and cfg.phrases
                else ""),
             f"- the authors' recipe: {recipe}",
             f"- word vectors: {description(cfg.embeddings)}; {metrics.get('glove_found')} of the "
             f"{metrics.get('vocab')} vocabulary words have one, {metrics.get('frozen_vocab', 0)} of them kept frozen",
             f"- parameters: {n_params:,} (without embeddings)",
             *(finished_lines(metrics) if "test" in metrics else in_progress_lines(metrics)),
             "", *checksum_table(metrics.get("data_sha256", {})),
             "", "Reproduce:", "", f"    {reproduce(cfg)}", ""]
    return "\n".join(lines)


def figures(split: dict) -> str:
    """A split's figures as compact JSON, to four decimals."""
    return json.dumps({k: round(v, 4) for k, v in split.items() if isinstance(v, float)})


def finished_lines(metrics: dict) -> list[str]:
    """The model card's lines on where the best evaluation stood and its figures, once the run is over."""
    step = f" (step {metrics['best_step']} of {metrics.get('steps_run')})" if "best_step" in metrics else ""
    return [f"- best epoch: {metrics.get('best_epoch')} of {metrics.get('epochs_run')}{step}; "
            f"training time {metrics.get('train_seconds', 0):.0f} s on {metrics.get('machine')}",
            f"- dev: {figures(metrics['dev'])}",
            f"- test: {figures(metrics['test'])}"]


def in_progress_lines(metrics: dict) -> list[str]:
    """The same lines for the best checkpoint of a run still training (or stopped, to be resumed)."""
    step = f" (step {metrics['best_step']})" if "best_step" in metrics else ""
    evaluations = len(metrics.get("history", []))
    return [f"- **training in progress**: the best dev checkpoint so far, from epoch {metrics.get('best_epoch')}"
            f"{step}, after {evaluations} evaluation{'' if evaluations == 1 else 's'} and "
            f"{metrics.get('train_seconds', 0):.0f} s of training on {metrics.get('machine')}",
            f"- dev: {figures(metrics.get('dev', {}))} (as measured during training; the stored weights are "
            "evaluated again when the run ends)",
            "- test: not evaluated until the run ends"]


def checksum_table(checksums: dict[str, str]) -> list[str]:
    """The SHA-256 of each data file the run read, as the lines of a Markdown table (none: no lines)."""
    if not checksums:
        return []
    return ["| data file | SHA-256 |", "| --- | --- |", *(f"| {name} | `{digest}` |" for name, digest in checksums.items())]


def reproduce(cfg: TrainConfig) -> str:
    """The command that made the run: the same flags, started by torchrun when it had several processes."""
    line = cfg.command or cfg.command_line()
    if cfg.world_size > 1:
        line = f"torchrun --nproc_per_node {cfg.world_size} -m disan train{line[len(PROG):]}"
    return line


