"""Evaluate a checkpoint on a split of its benchmark: figures and a per-example table."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from disan.data.loaders import load_task
from disan.nn import checkpoint
from disan.training.metrics import (
    classification_metrics,
    confusion,
    relatedness_metrics,
)
from disan.training.train import encode, predict, tokens_of


@dataclass
class Evaluation:
    metrics: dict
    table: pd.DataFrame            # one row per example: text, length, gold, predicted, correct (or error)
    labels: list[str]
    confusion: np.ndarray | None   # (C, C) rows = gold, columns = predicted; None for relatedness


def examples_table(path, split: str = "test", data_dir=None) -> Evaluation:
    """Metrics and a per-example table of a checkpoint on a split of its benchmark."""
    model, vocab, config, _ = checkpoint.load(path)
    tc = config.get("train_config", {})
    data = load_task(config["task"], data_dir or tc.get("data_dir"), fold=tc.get("fold", 0), seed=tc.get("seed", 0),
                     phrases=False)
    examples = getattr(data, split)
    if not examples:
        raise ValueError(f"{config['task']} has no {split} split here")
    toks = tokens_of(data, [split])[split]
    enc = encode(vocab, toks, [e.label for e in examples])
    pred = predict(model, enc)
    gold = np.asarray(enc.labels, dtype=np.float64)
    texts = [" ||| ".join(e.text) if isinstance(e.text, tuple) else e.text for e in examples]
    table = pd.DataFrame({"text": texts, "length": enc.lengths, "gold": gold, "predicted": pred})
    labels = list(config["labels"])
    if model.cfg.kind == "relatedness":
        table["error"] = pred - gold
        return Evaluation(relatedness_metrics(pred, gold), table, labels, None)
    table["gold"] = [labels[int(g)] for g in gold]
    table["predicted"] = [labels[int(p)] for p in pred]
    table["correct"] = table["gold"] == table["predicted"]
    return Evaluation(classification_metrics(pred.astype(int), gold.astype(int)), table, labels,
                      confusion(pred, gold, len(labels)))


def evaluate_checkpoint(path, split: str = "test", data_dir=None) -> dict:
    return examples_table(path, split, data_dir).metrics
