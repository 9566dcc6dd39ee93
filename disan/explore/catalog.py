"""The checkpoints a user can pick: every checkpoint directory under a root, with its headline figure,
and the broken ones with the reason (never loaded beyond their JSON)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from disan.nn import checkpoint

SHIPPED = Path(__file__).resolve().parents[2] / "checkpoints"


def checkpoints_dir() -> Path:
    """Where checkpoints are listed and trained into: ``DISAN_CHECKPOINTS``, else the repository's checkpoints/."""
    return Path(os.environ.get("DISAN_CHECKPOINTS") or SHIPPED)


@dataclass
class Entry:
    """One checkpoint directory as the app lists it: what it is, its headline figure, or why it is broken."""
    name: str
    path: Path
    task: str = "?"
    kind: str = "?"
    encoder: str = "?"
    headline: str = ""        # e.g. "test accuracy 0.912"
    error: str | None = None  # why it cannot be loaded
    config: dict = field(default_factory=dict)   # config.json and metrics.json, as read once by describe()
    metrics: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the checkpoint's JSON files could be read."""
        return self.error is None

    @property
    def label(self) -> str:
        """The text the model picker shows."""
        if not self.ok:
            return f"{self.name} — broken: {self.error}"
        return f"{self.name} — {self.task}, {self.encoder}" + (f", {self.headline}" if self.headline else "")


def headline(metrics: dict) -> str:
    """The test figure that names a checkpoint in the picker (accuracy or Pearson r), or ''."""
    test = metrics.get("test") or {}
    for key in ("accuracy", "pearson"):
        if isinstance(test.get(key), (int, float)):
            return f"test {key} {test[key]:.3f}"
    return ""


def describe(path: Path) -> Entry:
    """An :class:`Entry` from the checkpoint's JSON files only (the weights are not read)."""
    entry = Entry(path.name, path)
    try:
        config = checkpoint.read_config(path)
        metrics = checkpoint.read_json(checkpoint.resolve(path) / checkpoint.METRICS, "metrics.json")
    except checkpoint.CheckpointError as e:
        entry.error = str(e)
        return entry
    entry.config, entry.metrics = config, metrics if isinstance(metrics, dict) else {}
    model = config.get("model") or {}
    entry.task, entry.kind, entry.encoder = config.get("task", "?"), config.get("kind", "?"), model.get("encoder", "?")
    entry.headline = headline(entry.metrics)
    return entry


def list_checkpoints(root: str | Path | None = None) -> list[Entry]:
    """Every directory under ``root`` (working and broken), sorted by name.

    Half-written saves (``.tmp``) are skipped; a ``.prev`` left by an interrupted save stands for its checkpoint.
    """
    root = Path(root) if root is not None else checkpoints_dir()
    if not root.is_dir():
        return []
    names = sorted({p.name.removesuffix(".prev") for p in root.iterdir()
                    if p.is_dir() and not p.name.endswith(".tmp") and not p.name.startswith(".")})
    return [describe(root / name) for name in names]


def runs_table(items: list[Entry]) -> pd.DataFrame:
    """One row per working checkpoint, to compare encoders side by side (the paper's Tables 1 and 2)."""
    rows = []
    for e in items:
        if not e.ok:
            continue
        config, metrics = e.config, e.metrics
        tc, history = config.get("train_config") or {}, metrics.get("history") or []
        dev, test = metrics.get("dev") or {}, metrics.get("test") or {}
        key = "pearson" if e.kind == "relatedness" else "accuracy"
        rows.append({
            "checkpoint": e.name, "task": e.task, "encoder": e.encoder, "d_h": tc.get("d_h"),
            "train examples": metrics.get("n_train"), "parameters": config.get("n_params"),
            "epochs": len(history),
            "s / epoch": round(sum(h["epoch_seconds"] for h in history) / len(history), 1) if history else None,
            "metric": key, "dev": dev.get(key), "test": test.get(key),
        })
    return pd.DataFrame(rows)
