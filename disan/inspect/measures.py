"""Every measure of attention that the pages, the analyses and the notebook API quote, each defined once.

Axis convention (see :mod:`disan.nn.masks`): attention is ``P[j, i, k]``: rows ``j`` the query token,
columns ``i`` the attended token, ``k`` the feature; ``mask[j, i]`` says whether query j may attend i.
``keys(j) = sum_i mask[j, i]`` is the number of tokens row j may attend.

* :func:`reduce_features`: one number per cell, ``mean_k P[j, i, k]``, ``max_k P[j, i, k]`` or ``P[j, i, k]``.
* :func:`lift`: attention relative to uniform within its row, ``P[j, i] * keys(j)``.
* :func:`query_entropy`: ``H[j, k] = -sum_i P[j, i, k] log P[j, i, k]`` over the keys of row j.
* :func:`feature_sharpness`: ``mean_j H[j, k]`` over the rows that have a key; lower is sharper.
* :func:`received`, :func:`received_lift` and :func:`lift_of`: attention received by token i,
  ``r_i = sum_j A[j, i]``, against what uniform attention over every row's keys gives,
  ``u_i = sum_j mask[j, i] / keys(j)``; the received lift is ``r_i / u_i``. This is the one
  "attention received ÷ uniform" of the app: the shaded sentence of the Attention page, the Attribution
  and Case study pages all read it.
* :func:`rescale_rows`: each query row of reduced attention rescaled to sum to 1 over its keys, so that
  the max over features (whose rows sum to more than 1) is compared with uniform as a distribution.
* :func:`token_importance`: source2token importance, ``mean_k P_s2t[i, k]``.
* :func:`cosine_similarity` and :func:`similarity_matrix`: cosine of the angle between vectors.
* :func:`word_class`, :func:`is_stop_word`, :func:`is_punctuation`, :data:`NEGATIONS`: word classes (spaCy's
  English stop words against content words).
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence

import numpy as np
import torch
from spacy.lang.en.stop_words import STOP_WORDS

from disan.data.text import normalize

WORD_CLASSES = ("stop", "content", "other")
NEGATIONS = frozenset({"not", "n't", "no", "never", "nothing", "nobody"})  # normalised forms


def is_punctuation(token: str) -> bool:
    """Every character is a Unicode punctuation mark (category P*): "," "..." "--" "''"."""
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


def is_stop_word(token: str) -> bool:
    """Whether a token is on spaCy's English stop-word list, compared in its normalised form
    (:func:`disan.data.text.normalize`: "The" is one)."""
    return normalize(token) in STOP_WORDS


def word_class(token: str) -> str:
    """``stop`` (:func:`is_stop_word`), ``content`` (any other word with a letter) or ``other``
    (punctuation, numbers, symbols)."""
    if is_stop_word(token):
        return "stop"
    return "content" if any(c.isalpha() for c in normalize(token)) else "other"


def reduce_features(probs: np.ndarray, mode: str | int) -> np.ndarray:
    """(n, n, d) -> (n, n): the mean or max over features, or feature ``k`` alone.

    Multi-dimensional attention has one distribution per feature; a 2-D view needs one number per cell.
    """
    probs = np.asarray(probs)  # (n, n, d), reduced in its own precision: no float64 copy of n²·d values
    if mode == "mean":
        return probs.mean(axis=-1, dtype=float)
    if mode == "max":
        return probs.max(axis=-1).astype(float)
    if isinstance(mode, (int, np.integer)) and not isinstance(mode, bool):
        if not 0 <= mode < probs.shape[-1]:
            raise ValueError(f"feature {mode} out of range for {probs.shape[-1]} features")
        return probs[..., int(mode)].astype(float)
    raise ValueError(f"mode must be 'mean', 'max' or a feature index, not {mode!r}")


def lift(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Attention relative to uniform: ``values[j, i, ...]`` x the number of keys row j may attend.

    1 is what a row that spreads its attention evenly over its keys gives every key; 2 is twice
    that. The forward block's row j has j keys, so 1/j is "uniform" there, and the raw
    probabilities of a long row look small however sharp they are; the lift compares rows fairly.
    """
    keys = np.asarray(mask, dtype=bool).sum(axis=1).astype(float)  # (n,)
    values = np.asarray(values, dtype=float)
    return values * keys.reshape((-1,) + (1,) * (values.ndim - 1))


def query_entropy(probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(n, d) entropy (nats) of every query row j's attention, feature by feature, over the keys j may attend.

    0 is a feature that puts all of row j's mass on one token; log(keys) is uniform. NaN for rows
    without any key (the first token of the forward block). Computed row by row, so that no
    temporary of n²·d values is made.
    """
    probs, mask = np.asarray(probs), np.asarray(mask, dtype=bool)  # (n, n, d), (n, n)
    out = np.full((probs.shape[0], probs.shape[-1]), np.nan)
    for j in np.flatnonzero(mask.any(axis=1)):
        p = probs[j][mask[j]]                                      # (keys, d)
        out[j] = -(p * np.log(np.where(p > 0, p, 1))).sum(axis=0, dtype=float)
    return out


def feature_sharpness(probs: np.ndarray, mask: np.ndarray, entropy: np.ndarray | None = None) -> np.ndarray:
    """(d,) mean entropy (nats) of each feature's attention over the query rows that have a key.

    Lower is sharper: a feature that puts all its mass on one token scores 0. Rows
    without any valid key (the first token of the forward block) carry no
    distribution and are ignored; NaN for a feature when no row is valid.
    ``entropy``: :func:`query_entropy` of these probabilities, when already computed.
    """
    entropy = query_entropy(probs, mask) if entropy is None else entropy  # (n, d)
    rows = np.asarray(mask, dtype=bool).any(axis=1)
    if not rows.any():
        return np.full(entropy.shape[-1], np.nan)
    return entropy[rows].mean(axis=0)


def rank_features(probs: np.ndarray, mask: np.ndarray, top: int | None = None,
                  entropy: np.ndarray | None = None) -> list[int]:
    """Feature indices, sharpest (lowest mean entropy) first; ties keep feature order."""
    order = np.argsort(feature_sharpness(probs, mask, entropy), kind="stable")
    return [int(k) for k in order[:top]]


def token_importance(probs: np.ndarray) -> np.ndarray:
    """(n, D) source2token probabilities -> (n,) mean over features: one importance per token.

    Each feature's column is a distribution over tokens, so the mean sums to 1 as well.
    """
    return np.asarray(probs, dtype=float).mean(axis=1)


def cosine_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of the angle between two vectors; 0 when either is the zero vector (never NaN)."""
    a, b = np.ravel(np.asarray(a, dtype=float)), np.ravel(np.asarray(b, dtype=float))
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(np.clip(a @ b / (na * nb), -1.0, 1.0))


def similarity_matrix(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """(m, m) pairwise :func:`cosine_similarity` of m vectors (a zero vector is 0 with everything)."""
    v = np.stack([np.ravel(np.asarray(x, dtype=float)) for x in vectors])  # (m, D)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    unit = v / np.where(norms > 0, norms, 1.0)
    return np.clip(unit @ unit.T, -1.0, 1.0)


def rescale_rows(attention: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(n, n) attention with every query row j divided by its sum over the keys j may attend; masked cells
    and rows without a key are 0.

    The mean over features and a single feature already sum to 1 per row. The max over features sums
    to more, the more the features disagree, so every token would receive more than uniform attention
    gives; rescaled, a row says which tokens some feature of query j attends, as a distribution.
    """
    mask = np.asarray(mask, dtype=bool)
    values = np.where(mask, np.asarray(attention, dtype=float), 0.0)
    total = values.sum(axis=-1, keepdims=True)
    return values / np.where(total > 0, total, 1.0)


def received(attention, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention received by each token, and what uniform attention would give it.

    ``attention`` (..., n, n) [j, i], or (..., n, n, d) [j, i, k] reduced by the mean over features
    first, and ``mask`` (..., n, n) [j, i] -> ``r`` (..., n) with ``r_i = sum_j A[j, i]`` and ``u`` (..., n)
    with ``u_i = sum_j mask[j, i] / keys(j)``. Under a directional mask the first token can be attended
    by every later query and the last by none, so r depends on position as much as on the word; r / u
    (:func:`received_lift`) compares tokens at different positions. A token no query may attend has u = 0.
    """
    attention, mask = torch.as_tensor(attention), torch.as_tensor(mask)
    if attention.dim() == mask.dim() + 1:
        attention = attention.mean(dim=-1)
    got = attention.sum(dim=-2)
    allowed = mask.to(got.dtype)
    keys = allowed.sum(dim=-1, keepdim=True).clamp_min(1)
    return got, (allowed / keys).sum(dim=-2)


def received_lift(attention, mask) -> np.ndarray:
    """(n,) attention received relative to uniform, ``r_i / u_i`` (:func:`received`): 1 is what attention
    spread evenly over every query's keys would give token i; NaN where no query may attend i."""
    return lift_of(*(t.double().numpy() for t in received(attention, mask)))


def lift_of(got, uniform) -> np.ndarray:
    """``r / u``: what attention gives and what uniform attention under the same mask gives (:func:`received`
    per token; the feature atlas also sums both over a class of tokens, Σ_j Σ_{i∈C} P[j, i, k] ÷
    Σ_j |C ∩ keys(j)| / keys(j), or takes a distance or an entropy of each); 1 is what uniform attention
    gives, 2 twice that; NaN where u = 0 (no query may attend the token or the class)."""
    got, uniform = np.asarray(got, dtype=float), np.asarray(uniform, dtype=float)
    reached = uniform > 0
    return np.where(reached, got / np.where(reached, uniform, 1.0), np.nan)
