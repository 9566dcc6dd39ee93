"""Evaluation figures: accuracy and confusion for classes; Pearson r, Spearman rho and MSE for relatedness."""
from __future__ import annotations

import numpy as np


def classification_metrics(pred: np.ndarray, gold: np.ndarray) -> dict:
    """Accuracy of predicted class indices (NaN on an empty split) and the number of examples."""
    return {"accuracy": float((pred == gold).mean()) if len(gold) else float("nan"), "n": int(len(gold))}


def confusion(pred: np.ndarray, gold: np.ndarray, n_classes: int) -> np.ndarray:
    """(n_classes, n_classes) counts: rows = gold class, columns = predicted class."""
    m = np.zeros((n_classes, n_classes), dtype=np.int64)
    np.add.at(m, (gold.astype(int), pred.astype(int)), 1)
    return m


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions), as Spearman's rho needs."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(len(x), dtype=np.float64)
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    sums = np.zeros(len(counts))
    np.add.at(sums, inverse, ranks)
    return (sums / counts)[inverse]


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's r; NaN when either side is constant (r is undefined there, not 0)."""
    a, b = a - a.mean(), b - b.mean()
    denom = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denom) if denom > 0 else float("nan")


def relatedness_metrics(pred: np.ndarray, gold: np.ndarray) -> dict:
    """Pearson r, Spearman rho and mean squared error of predicted scores, and the number of examples."""
    return {"pearson": pearson(pred, gold), "spearman": pearson(_ranks(pred), _ranks(gold)),
            "mse": float(((pred - gold) ** 2).mean()), "n": int(len(gold))}
