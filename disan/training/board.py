"""TensorBoard event files of a training run, next to its JSON log lines.

Per epoch (the step axis is the epoch): ``train/loss``, ``train/accuracy`` (not for relatedness),
``dev/<metric>`` (accuracy; or pearson, spearman and mse), ``train/learning_rate``, ``epoch/seconds``,
and the probe sentence's attention as two images, ``attention/forward`` and ``attention/backward``
(mean over features, rows = query token j, columns = attended token i, the largest weight white).
At the end, ``test/<metric>`` of the best checkpoint at its epoch, and the run's command as text.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from disan.data.paths import user_folder
from disan.data.text import Vocab
from disan.nn.heads import TextModel
from disan.training.config import TrainConfig
from disan.training.probe import PROBE, snapshot

LOGDIR_ENV = "DISAN_LOGDIR"  # the folder of every run's event folder, instead of the user folder's runs/tensorboard
IMAGE_SIZE = 160  # pixels the probe's attention image spans at least, so that a 5-token sentence is visible


def logdir_root() -> Path:
    """The folder of every run's event folder: ``$DISAN_LOGDIR``, else ``runs/tensorboard`` in
    :func:`disan.data.paths.user_folder` (a checkout's root; not the working directory, since an installed
    package's app runs in the package's folder, which is no place to write): a folder of its own, because
    checkpoints are often trained into ``runs/<name>`` too (scripts/reproduce.sh)."""
    return Path(os.environ.get(LOGDIR_ENV) or user_folder() / "runs" / "tensorboard")


def logdir(cfg: TrainConfig) -> Path:
    """Where the run's event files go: ``cfg.logdir``, else the folder named by the last part of ``cfg.out``
    in :func:`logdir_root`."""
    if cfg.logdir:
        return Path(cfg.logdir)
    return logdir_root() / Path(cfg.out).name


def attention_image(probs: np.ndarray) -> torch.Tensor:
    """(n, n) attention -> (1, H, W) grayscale in [0, 1], scaled to its largest weight and enlarged
    by repeating every weight over a square of pixels (nearest neighbour, so no weight is blurred)."""
    top = float(probs.max()) if probs.size else 0.0
    image = torch.from_numpy(np.asarray(probs, dtype=np.float32) / (top if top > 0 else 1.0))
    cell = max(1, -(-IMAGE_SIZE // max(1, probs.shape[0])))
    return image.repeat_interleave(cell, 0).repeat_interleave(cell, 1)[None]


class Board:
    """The event files of one run; every method does nothing when the run writes none (another
    process than the main one, or ``--no-tensorboard``). The files are made at the first epoch, so
    that a run that fails before it leaves none; a context manager that closes them."""

    def __init__(self, cfg: TrainConfig, enabled: bool = True):
        self.cfg, self.enabled, self._writer = cfg, enabled and cfg.tensorboard, None
        if not self.enabled:
            return
        events, out = logdir(cfg).resolve(), Path(cfg.out).resolve()
        if events == out or out in events.parents:
            raise ValueError(f"the TensorBoard folder {events} is inside the checkpoint folder {out}, which every "
                             f"save replaces; choose another --logdir")
        try:  # at once, not at the end of the first epoch
            from torch.utils import tensorboard  # noqa: F401
        except ImportError:  # torch's message names a version, not the missing package
            raise ValueError("TensorBoard event files need the tensorboard package (pip install tensorboard); "
                             "or train with --no-tensorboard") from None

    @property
    def writer(self):
        """The run's SummaryWriter, made at first use; None when the run writes no event files."""
        if self.enabled and self._writer is None:
            from torch.utils.tensorboard import SummaryWriter
            self._writer = SummaryWriter(log_dir=str(logdir(self.cfg)))
            self._writer.add_text("command", self.cfg.command or self.cfg.command_line())
        return self._writer

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *exc) -> None:
        if self._writer is not None:
            self._writer.close()

    def epoch(self, record: dict, lr: float, model: TextModel, vocab: Vocab) -> None:
        """An epoch's history record (train_loss -> train/loss, dev_accuracy -> dev/accuracy,
        epoch_seconds -> epoch/seconds), the learning rate, and the probe sentence's attention."""
        writer = self.writer
        if writer is None:
            return
        step = record.get("step", record["epoch"])  # the step axis: steps when the run counts them
        for key, value in record.items():
            if isinstance(value, float):
                writer.add_scalar(key.replace("_", "/", 1), value, step)
        writer.add_scalar("train/learning_rate", lr, step)
        snap = snapshot(model, vocab, PROBE, step)
        if snap is not None:
            for name, attention in zip(snap.names, snap.attention):
                writer.add_image(f"attention/{name.replace(' ', '_')}", attention_image(attention), step)
        writer.flush()  # so that a running TensorBoard shows the epoch now

    def test(self, metrics: dict) -> None:
        """The best checkpoint's test figures, at its epoch."""
        writer = self.writer
        if writer is None:
            return
        for key, value in metrics["test"].items():
            if isinstance(value, float):
                writer.add_scalar(f"test/{key}", value, metrics.get("best_step", metrics["best_epoch"]))
        writer.flush()
