"""Neutral in SST-5: its share of the training examples by length for each way of taking the tree nodes,
and how often each given checkpoint predicts it on dev. The recipe notes of docs/results.md quote both tables.

    python scripts/sst_neutral.py [CHECKPOINT ...]     # e.g. checkpoints/sst5 runs/sst5-authors

Lengths are SST leaves (its texts are the leaves joined by spaces). A checkpoint's dev figures come from
evaluate.examples_table with its stored vocabulary, as its record was measured.
"""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from disan.data.loaders import SST_NODES
from disan.data.registry import load_task
from disan.training.evaluate import examples_table

BUCKETS = ((1, 2), (2, 5), (5, 10), (10, 20), (20, 30), (30, None))  # [low, high) in leaves
NEUTRAL = "neutral"


def bucket_name(low: int, high: int | None) -> str:
    return f"{low}+" if high is None else (f"{low}" if high == low + 1 else f"{low}–{high - 1}")


def neutral_by_length() -> None:
    headers = [bucket_name(*b) for b in BUCKETS]
    print("| training nodes | examples | neutral | " + " | ".join(headers) + " |")
    print("|---|---:|---:|" + "---:|" * len(headers))
    for nodes in SST_NODES:
        data = load_task("sst5", nodes=nodes)
        neutral = data.labels.index(NEUTRAL)
        labels = np.array([int(e.label) for e in data.train])
        lengths = np.array([len(e.text.split()) for e in data.train])
        cells = []
        for low, high in BUCKETS:
            inside = (lengths >= low) & (lengths < (high or np.inf))
            cells.append(f"{(labels[inside] == neutral).mean():.1%} of {inside.sum():,}")
        print(f"| {nodes} | {len(labels):,} | {(labels == neutral).mean():.1%} | " + " | ".join(cells) + " |")
    data = load_task("sst5")
    share = np.mean([int(e.label) == data.labels.index(NEUTRAL) for e in data.dev])
    print(f"\nDev sentences: {len(data.dev):,}, {share:.1%} neutral.\n")


def dev_predictions(paths: list[str]) -> None:
    for i, path in enumerate(paths):
        evaluation = examples_table(path, "dev")
        labels, cm = evaluation.labels, evaluation.confusion  # cm: rows gold, columns predicted
        if i == 0:
            print("| checkpoint | dev accuracy | predicted neutral | " + " | ".join(f"recall {c}" for c in labels) + " |")
            print("|---|---:|---:|" + "---:|" * len(labels))
        recall = cm.diagonal() / cm.sum(axis=1)
        print(f"| {path} | {evaluation.metrics['accuracy']:.2%} | {cm[:, labels.index(NEUTRAL)].sum()} of {cm.sum()} | "
              + " | ".join(f"{r:.1%}" for r in recall) + " |")


if __name__ == "__main__":
    neutral_by_length()
    dev_predictions(sys.argv[1:])
