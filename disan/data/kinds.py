"""The kinds of model, one entry each: what a model of the kind takes, how its head combines the sentence
encodings, how it is trained and how its output is read.

* ``classify``: one sentence -> its encoding -> class logits, trained with cross-entropy, read by argmax;
* ``pair``: (premise, hypothesis), one shared encoder, [s_p; s_h; s_p - s_h; s_p * s_h] -> class logits;
* ``relatedness``: the pair features -> a distribution over scores 1..K (Tai et al., 2015), trained with KL
  divergence to a target distribution whose expectation is the gold score; the score read is its expectation.

A kind's name is how it is stored (``"kind": "pair"`` in a checkpoint's config, ``--kind`` on the command
line); everything else asks its entry (:func:`kind_of`), never compares the name. The entries live on the
data floor because the data reads labels by kind (classes or scores, one text or two); the model's layers
(:mod:`disan.nn.heads`) take the entry's features, loss and reading from here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# torch is imported inside the functions that compute: the registry is read where torch need not load (the
# drawing code names a kind's classes and sentences; a restarted server draws kept results before torch loads).


def single(encoding: torch.Tensor) -> torch.Tensor:
    """(B, d) -> (B, d): a one-sentence head reads the encoding as it is."""
    return encoding


def pair_features(p: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """(B, d), (B, d) -> (B, 4 d): [s_p; s_h; s_p - s_h; s_p * s_h]."""
    import torch
    return torch.cat([p, h, p - h, p * h], dim=-1)


def relatedness_target(score: torch.Tensor, levels: int) -> torch.Tensor:
    """Tai et al.'s sparse target distribution p over 1..K with expectation equal to the score."""
    import torch
    score = score.clamp(1, levels)
    lo = score.floor().clamp(max=levels - 1)
    frac = score - lo
    p = torch.zeros(score.shape[0], levels, dtype=score.dtype, device=score.device)
    idx = (lo - 1).long()
    p.scatter_(1, idx[:, None], (1 - frac)[:, None])
    p.scatter_add_(1, idx[:, None] + 1, frac[:, None])
    return p


def relatedness_score(logits: torch.Tensor) -> torch.Tensor:
    """(..., K) logits -> (...) expected score sum_r r p_r of the predicted distribution over 1..K."""
    import torch
    levels = torch.arange(1, logits.shape[-1] + 1, dtype=logits.dtype, device=logits.device)
    return logits.softmax(dim=-1) @ levels


def relatedness_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """KL divergence from the predicted distribution (B, K) to the target distribution of the scores (B,)."""
    from torch.nn import functional as F
    return F.kl_div(logits.log_softmax(dim=-1), relatedness_target(target, logits.shape[-1]), reduction="batchmean")


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy of class logits (B, C) against class indices (B,)."""
    from torch.nn import functional as F
    return F.cross_entropy(logits, target)


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """(..., C) logits -> (...) the predicted class index."""
    return logits.argmax(dim=-1)


@dataclass(frozen=True)
class Kind:
    """One kind of model: its inputs, head, training and reading, as every consumer reads them."""
    name: str                  # the stored form: checkpoints' configs, --kind
    texts: int                 # sentences per input: 1, or 2 (premise, hypothesis) through one shared encoder
    scored: bool               # labels are scores from 1 to K (levels), read as a number; else class indices
    metric: str                # the figure that selects and ranks models (a key of the evaluation's metrics)
    width: int                 # the head's features, in sentence-encoding widths
    features: Callable[..., torch.Tensor]                          # encodings (B, d) each -> (B, width d)
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]    # logits (B, K), targets (B,) -> mean loss
    read: Callable[[torch.Tensor], torch.Tensor]                  # logits (..., K) -> (...) predicted class or score
    target_dtype: str          # torch's dtype, by name, that the loss takes the labels in

    @property
    def pairs(self) -> bool:
        """Whether a model of this kind takes (premise, hypothesis) pairs rather than single sentences."""
        return self.texts == 2

    def targets(self, labels) -> torch.Tensor:
        """Labels (class indices or scores) as the loss takes them."""
        import torch
        return torch.tensor(labels, dtype=getattr(torch, self.target_dtype))


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("classify", 1, False, "accuracy", 1, single, cross_entropy, argmax, "long"),
    Kind("pair", 2, False, "accuracy", 4, pair_features, cross_entropy, argmax, "long"),
    Kind("relatedness", 2, True, "pearson", 4, pair_features, relatedness_loss, relatedness_score, "float32"),
)}


def kind_of(name: str) -> Kind:
    """The entry of a kind's name; ValueError naming the kinds for an unknown one."""
    if name not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {name!r}")
    return KINDS[name]


def kinds_taking(texts: int) -> list[str]:
    """The names of the kinds whose input has ``texts`` sentences, in the registry's order."""
    return [k.name for k in KINDS.values() if k.texts == texts]
