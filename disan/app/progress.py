"""What the Training and Models pages say about a run: its progress in words, its remaining time, its curves'
metrics, its test figures as a table. Pure functions of the job's progress events and metrics (see disan.training.jobs)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd


def curve_keys(history: Sequence[Mapping]) -> list[str]:
    """The per-epoch metrics worth a curve: the train_ and dev_ figures (not the dev set's size)."""
    return [k for k in (history[0] if history else {}) if k.startswith(("dev_", "train_")) and k != "dev_n"]


def step_line(progress: Mapping, epochs: int) -> str:
    """A training step's progress in words: the epoch and step, and the loss and accuracy (not for relatedness) of
    this epoch's training batches so far, named as training figures ("train accuracy 0.851"): the sidebar beside
    it shows the model's test figure, and a bare "accuracy" would read as that one."""
    accuracy = f", train accuracy {progress['accuracy']:.3f}" if progress.get("accuracy") is not None else ""
    return (f"epoch {progress['epoch']}/{epochs}, step {progress['step']}/{progress['steps']}, "
            f"train loss {progress['loss']:.4f}{accuracy}")


def remaining_seconds(progress: Mapping, epochs: int, history: Sequence[Mapping] = ()) -> float | None:
    """Seconds left in the whole run, if it runs all ``epochs``: the rest of this epoch (its step event's
    ``eta``, measured after the warm-up steps), plus the epochs still to come at the pace of the finished
    ones (their ``epoch_seconds``), or, before any has finished, at this epoch's measured pace per step.

    None while there is nothing measured to go by: before the first step, and during the warm-up steps
    of the first epoch (whose pace says little: a first estimate from them was 30 times too long). In
    a later epoch's warm-up, the rest of the epoch goes at the finished epochs' pace.
    """
    if not progress:
        return None
    epoch, step, steps, eta = progress["epoch"], progress["step"], progress["steps"], progress.get("eta")
    durations = [h["epoch_seconds"] for h in history if isinstance(h.get("epoch_seconds"), (int, float))]
    if durations:
        per_epoch = sum(durations) / len(durations)
    elif eta is not None and step < steps:
        per_epoch = eta / (steps - step) * steps  # eta is (steps - step) steps at the measured pace
    elif eta is not None:
        return 0.0 if epoch >= epochs else None
    else:
        return None
    if eta is None:
        eta = per_epoch * (steps - step) / steps
    return eta + max(0, epochs - epoch) * per_epoch


def duration(seconds: float) -> str:
    """A number of seconds as people say it: "45 s", "3 min 20 s", "1 h 05 min"."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, s = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {s:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def metrics_table(metrics: Mapping) -> pd.DataFrame:
    """An evaluation's figures as a table: one row per metric (accuracy, pearson, ...), its value, and the
    number of examples."""
    rows = [{"metric": k, "value": round(float(v), 4)} for k, v in metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k != "n"]
    table = pd.DataFrame(rows, columns=["metric", "value"])
    if isinstance(metrics.get("n"), int):
        table["examples"] = metrics["n"]
    return table
