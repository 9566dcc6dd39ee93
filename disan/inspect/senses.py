"""Word senses: the same word in different contexts, compared through its attention vectors (the paper's Fig. 6)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from disan.data.text import normalize
from disan.inspect.measures import similarity_matrix

PRESETS = {
    "glass (paper, Fig. 6)": ["The glass bottle is big", "A man is pouring a glass of tea"],
    "close (paper, Fig. 6)": ["The restaurant is about to close", "A biker is close to the fountain"],
    "case-study sentences (paper, Fig. 4 and 5)": ["Families have some dogs in front of a carousel",
                                                   "volleyball match is in progress between ladies"],
}

VECTORS = {
    "source2token": "source2token probabilities P[i, :] (2·d_h)",
    "output": "outputs u of the two DiSA blocks, concatenated (2·d_h)",
    "s": "attention outputs s of the two DiSA blocks, concatenated (2·d_h)",
}


def shared_words(token_lists: Sequence[Sequence[str]]) -> list[str]:
    """Normalised words present in every sentence, in the order of the first sentence."""
    if not token_lists:
        return []
    common = set.intersection(*({normalize(t) for t in tokens} for tokens in token_lists))
    seen, out = set(), []
    for t in map(normalize, token_lists[0]):
        if t in common and t not in seen:
            seen.add(t)
            out.append(t)
    return out


def positions(tokens: Sequence[str], word: str) -> list[int]:
    """Every index at which a normalised word occurs, in order."""
    return [i for i, t in enumerate(tokens) if normalize(t) == word]


def vector_kinds(trace) -> list[str]:
    """The keys of :data:`VECTORS` an encoder's trace holds, in that order: source2token vectors where its
    source2token attention has more than one feature (an additive encoder's single weight per token is no
    vector to compare), and the DiSA blocks' outputs u and attention outputs s where it has blocks."""
    s2t = trace.source2token
    has = {"source2token": s2t is not None and s2t.probs.shape[-1] > 1, "output": bool(trace.blocks),
           "s": bool(trace.blocks)}
    return [kind for kind in VECTORS if has[kind]]


def word_vector(trace, i: int, kind: str = "source2token") -> np.ndarray:
    """The (2 d_h,) vector of token ``i`` in one sentence's trace (``output``, ``s``: the blocks' u or s, in
    block order)."""
    return token_vectors(trace, kind)[i]


def token_vectors(trace, kind: str = "source2token") -> np.ndarray:
    """(n, 2 d_h): the vector of every token of a sentence (:func:`word_vector`)."""
    if kind == "source2token":
        return np.asarray(trace.source2token.probs)
    if kind in ("output", "s"):
        return np.concatenate([np.asarray(getattr(block, "u" if kind == "output" else "s")) for block in trace.blocks],
                              axis=1)
    raise ValueError(f"unknown vector kind {kind!r}; expected one of {list(VECTORS)}")


def cosine_baseline(trace_a, i: int, trace_b, k: int, kind: str = "source2token") -> tuple[float, float, int]:
    """What the cosine of a word's vectors in two sentences (token i of a, token k of b) can be judged against:
    the cosines of every other pair of tokens, one from each sentence (the word's own positions left out).

    Returns (their mean, the share of them below the word's cosine, how many there are); the mean is NaN
    where a sentence has no other token. Vectors of one kind are alike across tokens (source2token
    probabilities are all positive), so a high cosine of the word means little unless it beats its context.
    """
    a, b = token_vectors(trace_a, kind), token_vectors(trace_b, kind)        # (n_a, D), (n_b, D)
    cos = similarity_matrix([*a, *b])[:len(a), len(a):]                      # (n_a, n_b)
    others = np.delete(np.delete(cos, i, axis=0), k, axis=1)
    if not others.size:
        return float("nan"), float("nan"), 0
    return float(others.mean()), float((others < cos[i, k]).mean()), int(others.size)
