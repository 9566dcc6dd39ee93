"""Counterfactuals: edit a sentence and see the prediction and the attention change; drop each token in
turn (occlusion); forbid attention edges inside the encoder (knockout).

The input is one sentence, or a (premise, hypothesis) pair for the pair models; ``which`` (0 or 1)
names the sentence of a pair that is edited, the other keeping its encoding. Tokens are edited as
tokens (never re-tokenised), and masking a token puts the unknown word ``<unk>`` in its place.
"""
from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from disan.data.text import UNK
from disan.inspect.measures import reduce_features
from disan.inspect.pipeline import Prediction, SentenceTrace

EDITS = ("delete", "replace", "mask")


def edit(tokens: Sequence[str], op: str, position: int, replacement: str | None = None) -> list[str]:
    """The tokens after deleting, replacing (with ``replacement``, one or more words) or masking (``<unk>``)
    the token at ``position``."""
    if not 0 <= position < len(tokens):
        raise ValueError(f"token {position} is out of range for {len(tokens)} tokens")
    if op == "delete":
        if len(tokens) == 1:
            raise ValueError("deleting the only token leaves no sentence")
        new = []
    elif op == "mask":
        new = [UNK]
    elif op == "replace":
        new = (replacement or "").split()
        if not new:
            raise ValueError("type the word that replaces the token")
    else:
        raise ValueError(f"edit must be one of {EDITS}, not {op!r}")
    return list(tokens[:position]) + new + list(tokens[position + 1:])


def align(a: Sequence[str], b: Sequence[str]) -> tuple[list[int], list[int]]:
    """Positions in ``a`` and in ``b`` of the tokens the two sentences share, in order (the longest
    matching blocks of :class:`difflib.SequenceMatcher`)."""
    matcher = difflib.SequenceMatcher(None, list(a), list(b), autojunk=False)
    ia, ib = [], []
    for block in matcher.get_matching_blocks():
        ia += range(block.a, block.a + block.size)
        ib += range(block.b, block.b + block.size)
    return ia, ib


def _mean_attention(block) -> np.ndarray:
    """(n, n) mean over features of a block's attention, NaN where its mask forbids the edge."""
    probs = reduce_features(np.asarray(block.probs), "mean")
    return np.where(np.asarray(block.mask, dtype=bool), probs, np.nan)


@dataclass
class Aligned:
    """What a sentence and its edit share: the tokens, and the attention between them."""
    tokens: list[str]       # the shared tokens, in order
    positions: list[int]    # where they are in the sentence before the edit, ascending
    attention: dict[str, tuple[np.ndarray, np.ndarray]]  # per DiSA block: (m, m) mean attention before and after


def aligned_attention(before: SentenceTrace, after: SentenceTrace) -> Aligned:
    """The tokens both sentences share, and per DiSA block the (m, m) mean attention between them before
    and after; NaN where a sentence's mask forbids the edge."""
    ia, ib = align(before.tokens, after.tokens)
    return Aligned([before.tokens[i] for i in ia], ia, {
        x.name: (_mean_attention(x)[np.ix_(ia, ia)], _mean_attention(y)[np.ix_(ib, ib)])
        for x, y in zip(before.trace.blocks, after.trace.blocks)})


def _predict(pipe, sentences: Sequence[SentenceTrace], which: int, encodings: torch.Tensor) -> list[Prediction]:
    """Predictions with the ``which`` sentence's encoding replaced by each row of ``encodings`` (B, d)."""
    parts = [s.trace.encoding[None].expand(len(encodings), -1) for s in sentences]
    parts[which] = encodings
    return pipe.predict_encodings(*parts)


def _value(pipe, pred: Prediction, label: str) -> float:
    """What the analyses follow in a prediction: the probability of ``label``, or a relatedness score."""
    return pred.score if pipe.model.kind.scored else pred.probs[label]


@dataclass
class Counterfactual:
    """One sentence before and after an edit (or a knockout), with both predictions."""
    before: SentenceTrace
    after: SentenceTrace
    prediction_before: Prediction
    prediction_after: Prediction
    aligned: Aligned | None = None  # an edit's: what the two sentences share (a knockout keeps the tokens)


def compare_edit(pipe, sentences: Sequence[SentenceTrace], which: int, tokens: Sequence[str]) -> Counterfactual:
    """Trace the edited tokens in place of sentence ``which`` and predict before and after."""
    before = sentences[which]
    after = pipe.trace_tokens(list(tokens))
    encodings = torch.stack([before.trace.encoding, after.trace.encoding])
    first, second = _predict(pipe, sentences, which, encodings)
    return Counterfactual(before, after, first, second, aligned_attention(before, after))


def occlusion(pipe, sentences: Sequence[SentenceTrace], which: int) -> pd.DataFrame:
    """Drop each token of sentence ``which`` in turn (one batch, fast path): position, token, the value
    followed without it (the probability of the predicted class, or the relatedness score) and its change,
    largest drop first. A one-token sentence has nothing to drop and gives an empty table."""
    tokens = sentences[which].tokens
    full = _predict(pipe, sentences, which, sentences[which].trace.encoding[None])[0]
    columns = ["position", "token", "without", "change"]
    if len(tokens) < 2:
        return pd.DataFrame(columns=columns)
    variants = [tokens[:p] + tokens[p + 1:] for p in range(len(tokens))]
    preds = _predict(pipe, sentences, which, pipe.encode_tokens(variants))
    base = _value(pipe, full, full.label)
    without = np.array([_value(pipe, p, full.label) for p in preds])
    table = pd.DataFrame({"position": np.arange(len(tokens)), "token": tokens, "without": without,
                          "change": without - base})
    return table.sort_values(["change", "position"], kind="stable").reset_index(drop=True)


def knockout_mask(n: int, keys: Sequence[int], queries: Sequence[int] = ()) -> torch.Tensor:
    """(n, n) bool [j, i], False on the edges query j -> key i for every chosen key and every chosen query
    (no query chosen: every query, i.e. all the attention into the keys)."""
    allowed = torch.ones(n, n, dtype=torch.bool)
    rows = list(queries) if queries else list(range(n))
    for i in keys:
        allowed[rows, i] = False
    return allowed


def knockout(pipe, sentences: Sequence[SentenceTrace], which: int, blocks: Sequence[str], keys: Sequence[int],
             queries: Sequence[int] = ()) -> Counterfactual:
    """Sentence ``which`` traced again with the edges query -> key removed in the named DiSA blocks, passed
    through the encoder's custom mask; its prediction against the unchanged one."""
    before = sentences[which]
    if not keys:
        raise ValueError("choose at least one attended token to knock out")
    if not blocks:
        raise ValueError("choose at least one DiSA block")
    allowed = knockout_mask(len(before.tokens), keys, queries)
    after = pipe.trace_tokens(before.tokens, before.text, {name: allowed for name in blocks})
    first, second = _predict(pipe, sentences, which, torch.stack([before.trace.encoding, after.trace.encoding]))
    return Counterfactual(before, after, first, second)
