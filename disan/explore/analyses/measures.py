"""Per-token attention measures shared by the Attribution and Case study pages, and the word classes
of the case study (spaCy's English stop words against content words).

Attention received: token i receives r_i = sum_j mean_k P[j, i, k] from the queries j of a block.
Under a directional mask the first token can be attended by every later query and the last by none,
so r depends on position as much as on the word; a uniform distribution over each query's keys gives
u_i = sum_j mask[j, i] / |keys(j)|, and r_i / u_i (1 = what uniform attention would give) compares
tokens at different positions.
"""
from __future__ import annotations

import numpy as np
import torch
from spacy.lang.en.stop_words import STOP_WORDS

from disan.data.text import normalize

WORD_CLASSES = ("stop", "content", "other")


def word_class(token: str) -> str:
    """``stop`` (in spaCy's English stop-word list), ``content`` (any other word with a letter) or
    ``other`` (punctuation, numbers, symbols)."""
    word = normalize(token)
    if word in STOP_WORDS:
        return "stop"
    return "content" if any(c.isalpha() for c in word) else "other"


def received(probs: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention received by each token and what a uniform distribution would give it.

    probs (..., n, n, d) [j, i, k] and mask (..., n, n) [j, i] -> r (..., n) and u (..., n) as in the
    module's docstring; a token that no query may attend has u = 0 (and r = 0).
    """
    probs, mask = torch.as_tensor(probs), torch.as_tensor(mask)
    got = probs.mean(dim=-1).sum(dim=-2)
    allowed = mask.to(got.dtype)
    keys = allowed.sum(dim=-1, keepdim=True).clamp_min(1)
    return got, (allowed / keys).sum(dim=-2)


def relative_received(probs, mask) -> np.ndarray:
    """(n,) attention received relative to uniform attention, r_i / u_i; NaN where no query may attend i."""
    got, uniform = (t.double().numpy() for t in received(probs, mask))
    return np.where(uniform > 0, got / np.where(uniform > 0, uniform, 1.0), np.nan)
