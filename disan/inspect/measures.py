"""Every measure of attention that the pages, the analyses and the notebook API quote, each defined once.

Axis convention (see :mod:`disan.nn.masks`): attention is ``P[j, i, k]``: rows ``j`` the query token,
columns ``i`` the attended token, ``k`` the feature; ``mask[j, i]`` says whether query j may attend i;
``F[j, k]`` is the fusion gate of token j. Every measure but :func:`feature_sharpness` and
:func:`rank_features` (one sentence each) takes leading batch axes, (B, n, n, d) with (B, n, n) masks and
(B, n, d) gates, as batched traces give them (:func:`disan.inspect.batched.traces`): padding is a row and
a column that the mask forbids, so a sentence's measures in a batch are those of the sentence alone, and
a padded position's own value is 0 or NaN, as the measure says.

* :func:`key_counts`: ``keys(j) = sum_i mask[j, i]``, the number of tokens row j may attend.
* :func:`uniform_attention`: ``U[j, i] = mask[j, i] / keys(j)``, attention spread evenly over the keys.
* :func:`reduce_features`: one number per cell, ``mean_k P[j, i, k]``, ``max_k P[j, i, k]`` or ``P[j, i, k]``.
* :func:`lift`: attention relative to uniform within its row, ``P[j, i] * keys(j)``.
* :func:`query_entropy`: ``H[j, k] = -sum_i P[j, i, k] log P[j, i, k]`` over the keys of row j.
* :func:`feature_sharpness`: ``mean_j H[j, k]`` over the rows that have a key; lower is sharper.
* :func:`received`, :func:`received_lift` and :func:`lift_of`: attention received by token i,
  ``r_i = sum_j A[j, i]``, against what uniform attention over every row's keys gives,
  ``u_i = sum_j U[j, i]``; the received lift is ``r_i / u_i``. This is the one
  "attention received ÷ uniform" of the app: the shaded sentence of the Attention page, the Attribution
  and Case study pages all read it.
* :func:`gate_weighted_received`: what token i gives the outputs u of the tokens that attend it,
  ``g_i = mean_k sum_j (1 - F[j, k]) P[j, i, k]``.
* :func:`rescale_rows`: each query row of reduced attention rescaled to sum to 1 over its keys, so that
  the max over features (whose rows sum to more than 1) is compared with uniform as a distribution.
* :func:`mean_gate`: the fusion gate of each token, ``mean_k F[j, k]``.
* :func:`token_importance`: source2token importance, ``mean_k P_s2t[i, k]``.
* :func:`cosine_similarity` and :func:`similarity_matrix`: cosine of the angle between vectors.
* :func:`word_class`, :func:`is_stop_word`, :func:`is_punctuation`, :data:`NEGATIONS`: word classes (spaCy's
  English stop words against content words).
"""
from __future__ import annotations

import importlib.util
import math
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from disan.data.text import normalize

# torch is imported inside the three measures that compute on tensors (uniform_attention, received,
# gate_weighted_received): disan.render reads the numpy measures of this module, and a restarted server draws
# kept results before torch has loaded.

WORD_CLASSES = ("stop", "content", "other")
NEGATIONS = frozenset({"not", "n't", "no", "never", "nothing", "nobody"})  # normalised forms
ENTROPY_CELLS = 1 << 20  # (j, i, k) cells :func:`query_entropy` takes at a time: its temporaries stay ~20 MB


def is_punctuation(token: str) -> bool:
    """Every character is a Unicode punctuation mark (category P*): "," "..." "--" "''"."""
    return bool(token) and all(unicodedata.category(c).startswith("P") for c in token)


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    """spaCy's English stop words, loaded at the first word classified, from spaCy's own list
    (``spacy/lang/en/stop_words.py``, a module that imports nothing) run on its own: importing it as
    ``spacy.lang.en.stop_words`` would import spaCy itself, half a second of a server's first page, which
    a sentence whose tokens are kept on disk otherwise never needs."""
    package = importlib.util.find_spec("spacy")  # finds the package without running it
    if package is None or not package.submodule_search_locations:
        raise ModuleNotFoundError("spaCy's English stop-word list needs spacy: pip install -r requirements.txt")
    path = Path(package.submodule_search_locations[0]) / "lang" / "en" / "stop_words.py"
    spec = importlib.util.spec_from_file_location("spacy_en_stop_words", path)
    listing = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(listing)
    return frozenset(listing.STOP_WORDS)


def is_stop_word(token: str) -> bool:
    """Whether a token is on spaCy's English stop-word list, compared in its normalised form
    (:func:`disan.data.text.normalize`: "The" is one)."""
    return normalize(token) in _stop_words()


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


def key_counts(mask):
    """(..., m, n) mask -> (..., m) ``keys(j) = sum_i mask[j, i]``: how many tokens query row j may attend
    (0 for the first token of the forward block, and for padding). An array for an array, a tensor for a
    tensor."""
    return mask.sum(-1)


def uniform_attention(mask, dtype=None) -> torch.Tensor:
    """(..., n, n) mask -> (..., n, n) ``U[j, i] = mask[j, i] / keys(j)``: attention spread evenly over the
    keys of each row, what every measure "÷ uniform" compares with; a row without keys is 0. ``dtype``: a
    torch dtype (default float32)."""
    import torch
    allowed = torch.as_tensor(mask).to(dtype or torch.float32)
    return allowed / key_counts(allowed).clamp_min(1).unsqueeze(-1)


def lift(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Attention relative to uniform: ``values[..., j, i, ...]`` x :func:`key_counts` of row j of ``mask``
    (..., m, n); ``values`` has the mask's shape, or more axes after it (features).

    1 is what a row that spreads its attention evenly over its keys gives every key; 2 is twice
    that. The forward block's row j has j keys, so 1/j is "uniform" there, and the raw
    probabilities of a long row look small however sharp they are; the lift compares rows fairly.
    """
    keys = key_counts(np.asarray(mask, dtype=bool)).astype(float)  # (..., m)
    values = np.asarray(values, dtype=float)
    return values * keys.reshape(keys.shape + (1,) * (values.ndim - keys.ndim))


def query_entropy(probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(..., n, n, d) -> (..., n, d) entropy (nats) of every query row j's attention, feature by feature,
    over the keys j may attend: ``H[j, k] = -sum_i mask[j, i] P[j, i, k] log P[j, i, k]``.

    0 is a feature that puts all of row j's mass on one token; log(keys(j)) is uniform. NaN for rows
    without any key (the first token of the forward block, padding). The terms are float32 products
    summed in float64, over :data:`ENTROPY_CELLS` cells at a time, so that no temporary of n²·d values
    is made for a long sentence.
    """
    probs, mask = np.asarray(probs), np.asarray(mask, dtype=bool)  # (..., n, n, d), (..., n, n)
    n, d = probs.shape[-2:]
    count = math.prod(mask.shape[:-1])                            # R: every query row of every sentence
    rows_p, rows_m = probs.reshape(count, n, d), mask.reshape(count, n)  # (R, n, d), (R, n)
    out = np.full((len(rows_m), d), np.nan)
    rows = np.flatnonzero(rows_m.any(axis=-1))
    step = max(1, ENTROPY_CELLS // max(1, n * d))
    for start in range(0, len(rows), step):
        r = rows[start:start + step]
        p = rows_p[r]                                                # (r, n, d)
        # masked cells add an exact 0, so each row's sum is the sum over its keys alone
        out[r] = -np.where(rows_m[r][..., None], p * np.log(np.where(p > 0, p, 1)), 0).sum(axis=1, dtype=float)
    return out.reshape(mask.shape[:-1] + (d,))


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
    """(..., n, D) source2token probabilities -> (..., n) ``mean_k P_s2t[i, k]``: one importance per token.

    Each feature's column is a distribution over tokens, so the mean sums to 1 as well.
    """
    return np.asarray(probs, dtype=float).mean(axis=-1)


def mean_gate(gate: np.ndarray) -> np.ndarray:
    """(..., n, d) fusion gate -> (..., n) ``mean_k F[j, k]``: how much of its own h token j's output
    ``u = F ⊙ h + (1 - F) ⊙ s`` keeps (1), against the attention output s (0), on average over features."""
    return np.asarray(gate, dtype=float).mean(axis=-1)


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


def received(attention, mask, by_feature: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention received by each token, and what uniform attention would give it.

    ``attention`` (..., n, n) [j, i], or (..., n, n, d) [j, i, k] reduced by the mean over features
    first (``by_feature``: kept feature by feature), and ``mask`` (..., n, n) [j, i] -> ``r`` (..., n),
    or (..., n, d) by feature, with ``r_i = sum_j A[j, i]``, and ``u`` (..., n) with ``u_i = sum_j U[j, i]``
    (:func:`uniform_attention`). Under a directional mask the first token can be attended by every later
    query and the last by none, so r depends on position as much as on the word; r / u
    (:func:`received_lift`) compares tokens at different positions. A token no query may attend has u = 0.
    """
    import torch
    attention, mask = torch.as_tensor(attention), torch.as_tensor(mask)
    if by_feature:
        got = attention.sum(dim=-3)
    else:
        got = (attention.mean(dim=-1) if attention.dim() == mask.dim() + 1 else attention).sum(dim=-2)
    return got, uniform_attention(mask, got.dtype).sum(dim=-2)


def received_lift(attention, mask) -> np.ndarray:
    """(n,) attention received relative to uniform, ``r_i / u_i`` (:func:`received`): 1 is what attention
    spread evenly over every query's keys would give token i; NaN where no query may attend i."""
    return lift_of(*(t.double().numpy() for t in received(attention, mask)))


def gate_weighted_received(probs, gate) -> torch.Tensor:
    """(..., n, n, d) attention and (..., n, d) fusion gate -> (..., n) what token i contributes to the
    outputs of the tokens that attend it: ``g_i = mean_k sum_j (1 - F[j, k]) P[j, i, k]``.

    Query j's output is ``u_j = F_j ⊙ h_j + (1 - F_j) ⊙ s_j`` with ``s_j = sum_i P[j, i] ⊙ h_i``: feature k
    of h_i reaches u_j with the weight ``(1 - F[j, k]) P[j, i, k]``. Attention received (:func:`received`)
    counts every query alike; this discounts the queries whose gate keeps their own h. Padded queries
    attend nothing (P = 0) and add nothing.
    """
    import torch
    probs, gate = torch.as_tensor(probs), torch.as_tensor(gate)
    return torch.einsum("...jik,...jk->...i", probs, 1 - gate) / probs.shape[-1]


def lift_of(got, uniform) -> np.ndarray:
    """``r / u``: what attention gives and what uniform attention under the same mask gives (:func:`received`
    per token; the feature atlas also sums both over a class of tokens, Σ_j Σ_{i∈C} P[j, i, k] ÷
    Σ_j |C ∩ keys(j)| / keys(j), or takes a distance or an entropy of each); 1 is what uniform attention
    gives, 2 twice that; NaN where u = 0 (no query may attend the token or the class)."""
    got, uniform = np.asarray(got, dtype=float), np.asarray(uniform, dtype=float)
    reached = uniform > 0
    return np.where(reached, got / np.where(reached, uniform, 1.0), np.nan)
