"""Evaluation: a model's predictions and metrics on an encoded split, and a checkpoint's figures
and per-example table on a split of its benchmark."""
from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from disan.data.batching import Encoded, batches, encode, tokens_of
from disan.data.files import trained_task
from disan.data.text import join_pair
from disan.nn import checkpoint
from disan.nn.device import device_of
from disan.nn.heads import TextModel
from disan.training.metrics import (
    classification_metrics,
    confusion,
    relatedness_metrics,
)


@torch.no_grad()
def predict(model: TextModel, data: Encoded, batch_size: int = 128) -> np.ndarray:
    """Predicted class index, or relatedness score, for every example in order, computed on the
    model's device; leaves the model in eval mode."""
    model.eval()
    device = device_of(model)
    out = np.zeros(len(data), dtype=np.float64)
    for idx, ids, _ in batches(data, batch_size, False, random.Random(0)):
        logits = model(*(x.to(device) for x in ids))
        out[idx] = model.kind.read(logits).double().cpu().numpy()
    return out


def evaluate(model: TextModel, data: Encoded) -> dict:
    """Metrics of the model on an encoded split: accuracy, or Pearson r, Spearman rho and MSE; plus n."""
    pred = predict(model, data)
    gold = np.asarray(data.labels, dtype=np.float64)
    if model.kind.scored:
        return relatedness_metrics(pred, gold)
    return classification_metrics(pred.astype(int), gold.astype(int))


@dataclass
class Evaluation:
    """A checkpoint on one split: its metrics and one table row per example."""
    metrics: dict
    table: pd.DataFrame            # text (pairs joined by join_pair), length, gold, predicted, correct (or error)
    labels: list[str]
    confusion: np.ndarray | None   # (C, C) rows = gold, columns = predicted; None for relatedness
    kind: str                      # the model's kind (a name of disan.data.kinds.KINDS)
    vocabulary: str = "stored words"  # the words it predicted with (checkpoint.open_vocabulary's line when open)


def examples_table(path, split: str = "test", data_dir=None, device: str | torch.device = "cpu",
                   vocabulary: str = "stored") -> Evaluation:
    """Metrics and a per-example table of a checkpoint on a split of the benchmark it was trained on,
    its model run on ``device`` (auto, cpu, cuda or cuda:N). ``vocabulary``: "stored", the words with
    which its recorded figures were measured, or "open", every word of its vectors (see
    :func:`disan.nn.checkpoint.load`)."""
    model, vocab, config, _ = checkpoint.load(path, device=device, vocabulary=vocabulary)
    tc = config.get("train_config", {})
    data = trained_task(config, data_dir, splits=[split])  # whole sentences, whatever the training used
    examples = getattr(data, split)
    if not examples:
        raise ValueError(f"{config['task']} has no {split} split here")
    enc = encode(vocab, tokens_of(data, [split], tc.get("tokens", "spacy"))[split], [e.label for e in examples])
    pred = predict(model, enc)
    gold = np.asarray(enc.labels, dtype=np.float64)
    texts = [join_pair(*e.text) if isinstance(e.text, tuple) else e.text for e in examples]
    table = pd.DataFrame({"text": texts, "length": enc.lengths, "gold": gold, "predicted": pred})
    labels = list(config["labels"])
    kind, words = model.cfg.kind, config.get("vocabulary", "stored words")
    if model.kind.scored:
        table["error"] = pred - gold
        return Evaluation(relatedness_metrics(pred, gold), table, labels, None, kind, words)
    table["gold"] = [labels[int(g)] for g in gold]
    table["predicted"] = [labels[int(p)] for p in pred]
    table["correct"] = table["gold"] == table["predicted"]
    return Evaluation(classification_metrics(pred.astype(int), gold.astype(int)), table, labels,
                      confusion(pred, gold, len(labels)), kind, words)


