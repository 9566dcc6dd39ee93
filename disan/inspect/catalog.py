"""The checkpoints a user can pick: every checkpoint directory under a root, with its headline figure,
and the broken ones with the reason. Listing checks each checkpoint as loading would, short of reading
the tensors (:func:`disan.nn.checkpoint.check`)."""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from disan.data.kinds import KINDS, kind_of
from disan.data.paths import checkpoint_folders, checkpoints_dir, shipped_checkpoints
from disan.nn import checkpoint

TRAINING = "training"  # how the picker names the best checkpoint so far of a run that has not ended


@dataclass
class Entry:
    """One checkpoint directory as the app lists it: what it is, its headline figure, or why it is broken."""
    name: str
    path: Path                # the checkpoint directory as listed (what --out names)
    directory: Path | None = None  # where it is read from (path, or path.prev after an interrupted save)
    task: str = "?"
    kind: str = "?"
    encoder: str = "?"
    headline: str = ""        # e.g. "test accuracy 0.912"
    error: str | None = None  # why it cannot be loaded
    config: dict = field(default_factory=dict)   # config.json and metrics.json, as read once by describe()
    metrics: dict = field(default_factory=dict)
    shipped: bool = False     # one of the checkpoints installed with the package: read-only

    @property
    def ok(self) -> bool:
        """True when the checkpoint passed :func:`disan.nn.checkpoint.check`: it loads."""
        return self.error is None

    @property
    def label(self) -> str:
        """The text the model picker shows."""
        if not self.ok:
            return f"{self.name} — broken: {self.error}"
        return f"{self.name} — {self.task}, {self.encoder}" + (f", {self.headline}" if self.headline else "")

    @property
    def vocabulary(self) -> str:
        """Which words the app's model predicts with (it loads every checkpoint with the "open" vocabulary,
        :func:`disan.nn.checkpoint.open_vocabulary`): its stored words and those of its vectors, or why only
        the stored ones."""
        source, why_not = checkpoint.vectors_to_open(self.config)
        return f"open: the stored words and every word of {source}" if source else why_not

    @property
    def vectors_missing(self) -> str | None:
        """The line saying that the vectors of its open vocabulary are not on this machine, naming what gets
        them (:func:`disan.nn.checkpoint.vectors_missing`), else None."""
        return checkpoint.vectors_missing(self.config)

    @property
    def short_label(self) -> str:
        """The label cut to what a narrow picker shows whole: the name, the encoder where it is not DiSAN, and
        the headline figure ("test acc. 0.912": named as the test split's, since pages beside the picker show
        training and dev figures), or "training" for a run that has not ended (:attr:`label` says all of it)."""
        if not self.ok:
            return f"{self.name} — broken"
        parts = [self.encoder] if self.encoder != "disan" else []
        if self.headline.startswith(TRAINING):
            parts.append(TRAINING)  # a run still training: its dev figure so far is in the label
        elif self.headline:
            parts.append(self.headline.replace("accuracy", "acc."))
        return f"{self.name} — " + ", ".join(parts) if parts else self.name


def headline(kind: str, metrics: dict) -> str:
    """The test figure that names a checkpoint in the picker (its kind's metric, :data:`disan.data.kinds.KINDS`);
    for the best checkpoint of a run still training, which has no test figure yet, its dev figure so far; or ''."""
    key = KINDS[kind].metric if kind in KINDS else None
    value = (metrics.get("test") or {}).get(key)
    if isinstance(value, (int, float)):
        return f"test {key} {value:.3f}"
    value = (metrics.get("dev") or {}).get(key)
    return f"{TRAINING}, dev {key} {value:.3f} so far" if isinstance(value, (int, float)) else ""


def describe(path: Path) -> Entry:
    """An :class:`Entry` from :func:`disan.nn.checkpoint.check`: the JSON files, the weights' header and shapes."""
    entry = Entry(path.name, path)
    try:
        entry.directory = checkpoint.resolve(path)
        config, _, _, metrics = checkpoint.check(entry.directory)
    except checkpoint.CheckpointError as e:
        entry.error = str(e)
        return entry
    entry.config, entry.metrics = config, metrics
    model = config.get("model") or {}
    entry.task, entry.kind, entry.encoder = config.get("task", "?"), config.get("kind", "?"), model.get("encoder", "?")
    entry.headline = headline(entry.kind, entry.metrics)
    return entry


def default_entry(entries: list[Entry]) -> Entry | None:
    """The checkpoint used where none is named (the app's first model, the benchmarks' default): the first
    working single-sentence one, since the paper's case study is about one sentence (sst5 among the
    shipped ones); None when there is none."""
    return next((e for e in entries if e.ok and kind_of(e.kind).texts == 1), None)


def default_checkpoint() -> str | None:
    """The folder of :func:`default_entry` among the listed checkpoints, or None: what the benchmark commands
    run where no checkpoint is named, looked up when they run (their --help reads no checkpoint)."""
    entry = default_entry(list_checkpoints())
    return str(entry.path) if entry else None


def roots(root: str | Path | None = None) -> list[Path]:
    """The folders listed: ``root``, else :func:`disan.data.paths.checkpoint_folders` (the shipped checkpoints,
    then the user's)."""
    return [Path(root)] if root is not None else checkpoint_folders()


def fingerprint(root: str | Path | None = None) -> tuple:
    """What :func:`list_checkpoints` depends on, cheap to read: the folders listed, and every checkpoint
    file's name, size and modification time. The app lists checkpoints again only when this changes."""
    folders, files = roots(root), []
    for top in folders:
        for name in checkpoint.names(top):
            for folder in (top / name, top / f"{name}.prev"):
                if folder.is_dir():
                    files += [(str(folder), f.name, f.stat().st_size, f.stat().st_mtime_ns)
                              for f in os.scandir(folder)]
    return (tuple(map(str, folders)), tuple(sorted(files)))


def list_checkpoints(root: str | Path | None = None) -> list[Entry]:
    """Every checkpoint directory under the folders of :func:`roots` (working and broken), folder by folder,
    sorted by name in each. The shipped ones are marked where nothing is trained into their folder (an
    installed package's); a later one named like an earlier one is broken, since a name finds the first
    (:func:`disan.nn.checkpoint.locate`)."""
    entries, seen = [], set()
    for top in roots(root):
        shipped = top == shipped_checkpoints() and top != checkpoints_dir()
        for name in checkpoint.names(top):
            entry = describe(top / name)
            entry.shipped = shipped
            if name in seen:
                entry.error = f"a checkpoint listed before it has the name {name}; rename its folder {top / name}"
            seen.add(name)
            entries.append(entry)
    return entries


def where(path: Path) -> str:
    """A checkpoint's directory as a command names it: relative to the working directory when inside it."""
    path = Path(path).absolute()
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def card(entry: Entry) -> str:
    """The checkpoint's model card, with the ``--out`` of its training command set to where the checkpoint
    lives now (a run trained into ``runs/sick`` and shipped as ``checkpoints/sick`` reproduces there)."""
    lines = checkpoint.card(entry.directory or entry.path).splitlines()
    for k, line in enumerate(lines):
        command = line.lstrip()
        if not command.startswith("python -m disan train"):
            continue
        words = shlex.split(command)
        if "--out" in words[:-1]:
            words[words.index("--out") + 1] = where(entry.path)
            lines[k] = line[:len(line) - len(command)] + shlex.join(words)
    return "\n".join(lines)


def _seconds_per_epoch(history: list[dict]) -> float | None:
    """The mean duration of a run's epochs; None for a run evaluated every N steps, whose records time
    their periods instead (``seconds``)."""
    seconds = [h["epoch_seconds"] for h in history if "epoch_seconds" in h]
    return round(sum(seconds) / len(seconds), 1) if seconds else None


def runs_table(items: list[Entry]) -> pd.DataFrame:
    """One row per working checkpoint, to compare encoders side by side (the paper's Tables 1 and 2)."""
    rows = []
    for e in items:
        if not e.ok:
            continue
        config, metrics = e.config, e.metrics
        tc, history = config.get("train_config") or {}, metrics.get("history") or []
        dev, test = metrics.get("dev") or {}, metrics.get("test") or {}
        key = kind_of(e.kind).metric
        rows.append({
            "checkpoint": e.name, "task": e.task, "encoder": e.encoder, "d_h": tc.get("d_h"),
            "train examples": metrics.get("n_train"), "parameters": config.get("n_params"),
            "epochs": len(history),
            "s / epoch": _seconds_per_epoch(history),
            "metric": key, "dev": dev.get(key), "test": test.get(key),
        })
    return pd.DataFrame(rows)
