"""Two checkpoints on one sentence: DiSAN against DiSAN without directions, against an encoder without
token2token attention, two tasks, or two snapshots of one training run.

What is computed here: how alike the two rank the cells of each view both have (DiSA blocks of one name
have the same mask; source2token importance), beside what two unrelated models give, and what an encoder
lacks of DiSAN's parts; :mod:`disan.render.compare` draws both models' predictions, attention, gates and
source2token and their differences. Both checkpoints tokenise with the same tokenizer, so their traces of
one text share the token axis.

Attention is compared as lift over uniform (:func:`disan.inspect.measures.lift`: P × the number of keys
the query row may attend, the Attention page's default), never as raw probabilities: forward row j
spreads one unit over j keys, so short rows hold large values in any model, and two unrelated models
under the same mask rank the raw cells alike. The lift takes the row length out; what remains is
checked against a null, the same τ with B's rows shuffled among their own keys (each row keeps its
values, which key gets which is random).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from disan.analyses import stats
from disan.inspect import measures
from disan.inspect.pipeline import Prediction, SentenceTrace


@dataclass
class Side:
    """One checkpoint's part of the comparison."""
    name: str                  # the checkpoint's name, as the picker shows it
    encoder: str               # its encoder, e.g. disan, disan-nodir, bilstm
    prediction: Prediction
    sentence: SentenceTrace    # the compared sentence (for a pair: the premise or the hypothesis)


def lacks(side: Side) -> list[str]:
    """What the encoder lacks of DiSAN's parts, in words (empty for DiSAN itself)."""
    tr = side.sentence.trace
    missing = []
    if not tr.blocks:
        missing += ["token2token attention (no DiSA block)", "fusion gates"]
    elif not {"forward", "backward"} <= {b.direction for b in tr.blocks}:
        missing.append("directional masks: every block attends to all the other tokens")
    if tr.source2token is None:
        missing.append("source2token attention")
    return missing


NULL_DRAWS = 200  # shuffles of B's rows that give the τ of unrelated models


def mean_attention(block) -> np.ndarray:
    """(n, n) a block's attention probabilities, mean over features (masked cells hold 0)."""
    return measures.reduce_features(np.asarray(block.probs), "mean")


@dataclass
class Agreement:
    """How alike two models' values over the same cells are, and what unrelated models give."""
    tau: float                  # Kendall's tau-b over the cells both may attend
    null: stats.NullRange       # the same τ with B's rows shuffled among their allowed cells
    largest_difference: float   # max |A − B| over those cells


def agreement(a: np.ndarray, b: np.ndarray, mask: np.ndarray, draws: int = NULL_DRAWS, seed: int = 0) -> Agreement:
    """τ between two models' (rows, cols) values over the cells ``mask`` allows, and its null: B's rows
    each shuffled among their allowed cells ``draws`` times, which keeps the spread of every row and
    breaks any relation between the two models. For attention pass lifts: on raw probabilities the row
    lengths alone make unrelated models agree."""
    a, b, mask = np.asarray(a, dtype=float), np.asarray(b, dtype=float), np.asarray(mask, dtype=bool)
    rng = np.random.default_rng(seed)
    cells = a[mask]
    null = [stats.kendall_tau(cells, stats.shuffle_rows(b, mask, rng)[mask]) for _ in range(draws)]
    return Agreement(stats.kendall_tau(cells, b[mask]), stats.null_range(null),
                     float(np.max(np.abs(cells - b[mask]), initial=0.0)))


def agreements(a: Side, b: Side, draws: int = NULL_DRAWS, seed: int = 0) -> pd.DataFrame:
    """One row per view both models have (a DiSA block of the same name and mask, on lift; source2token
    importance): view | τ (A vs B) | unrelated models: τ | largest |A − B|."""
    rows = []
    blocks = [{block.name: block for block in s.sentence.trace.blocks} for s in (a, b)]
    for name, x in blocks[0].items():
        y = blocks[1].get(name)
        if y is None or x.direction != y.direction:
            continue
        mask = np.asarray(x.mask, dtype=bool)
        rows.append((f"{name} attention (lift)", agreement(measures.lift(mean_attention(x), mask),
                                                         measures.lift(mean_attention(y), mask), mask, draws, seed)))
    if a.sentence.trace.source2token is not None and b.sentence.trace.source2token is not None:
        importance = [measures.token_importance(np.asarray(s.sentence.trace.source2token.probs))[None, :]
                      for s in (a, b)]
        rows.append(("source2token importance", agreement(*importance, np.ones_like(importance[0], dtype=bool),
                                                          draws, seed)))
    return pd.DataFrame({"view": [view for view, _ in rows],
                         "τ (A vs B)": [r.tau for _, r in rows],
                         "unrelated models: τ (mean [5%, 95%])": [str(r.null) for _, r in rows],
                         "largest |A − B|": [r.largest_difference for _, r in rows]})


@dataclass
class Comparison:
    """Two checkpoints on one sentence (:func:`comparison`)."""
    a: Side
    b: Side
    lacks: list[list[str]]      # what each encoder lacks of DiSAN's parts (:func:`lacks`)
    agreement: pd.DataFrame     # how alike the two are, against unrelated models (:func:`agreements`)
    draws: int                  # the shuffles of B's rows behind each null


def comparison(a: Side, b: Side, draws: int = NULL_DRAWS, seed: int = 0) -> Comparison:
    """Two checkpoints' traces of one text compared: what each encoder lacks and how alike the views both
    have are. ValueError when the traces are of different token sequences."""
    if a.sentence.tokens != b.sentence.tokens:
        raise ValueError("the two traces are of different token sequences")
    return Comparison(a, b, [lacks(a), lacks(b)], agreements(a, b, draws, seed), draws)
