"""Evaluate a checkpoint on a split of its benchmark: figures and a per-example table."""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import checkpoint
from .data import load_task
from .metrics import classification_metrics, relatedness_metrics
from .train import encode, predict, tokens_of


def examples_table(path, split: str = "test", data_dir=None) -> tuple[dict, pd.DataFrame]:
    """(metrics, one row per example: text, gold, predicted, length, correct) for a checkpoint."""
    model, vocab, config, _ = checkpoint.load(path)
    tc = config.get("train_config", {})
    data = load_task(config["task"], data_dir or tc.get("data_dir"), fold=tc.get("fold", 0), seed=tc.get("seed", 0),
                     phrases=False)
    examples = getattr(data, split)
    if not examples:
        raise ValueError(f"{config['task']} has no {split} split here")
    toks = tokens_of(data)[split]
    enc = encode(vocab, toks, [e.label for e in examples])
    pred = predict(model, enc)
    gold = np.asarray(enc.labels, dtype=np.float64)
    texts = [" ||| ".join(e.text) if isinstance(e.text, tuple) else e.text for e in examples]
    table = pd.DataFrame({"text": texts, "length": enc.lengths, "gold": gold, "predicted": pred})
    if model.cfg.kind == "relatedness":
        metrics = relatedness_metrics(pred, gold)
        table["error"] = pred - gold
    else:
        metrics = classification_metrics(pred.astype(int), gold.astype(int))
        labels = config["labels"]
        table["gold"] = [labels[int(g)] for g in gold]
        table["predicted"] = [labels[int(p)] for p in pred]
        table["correct"] = table["gold"] == table["predicted"]
    return metrics, table


def evaluate_checkpoint(path, split: str = "test", data_dir=None) -> dict:
    return examples_table(path, split, data_dir)[0]
