"""Two checkpoints on one sentence: DiSAN against DiSAN without directions, against an encoder without
token2token attention, two tasks, or two snapshots of one training run.

Both predictions; each model's attention, gates and source2token; their difference where both have the
same view (DiSA blocks of one name have the same mask); how alike the two rank the cells, beside what two
unrelated models give; and what an encoder lacks. Both checkpoints tokenise with the same tokenizer, so
their traces of one text share the token axis.

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

from disan.render import figures, markup, views
from disan.analyses import stats
from disan.render.tables import file_name
from disan.render.views import Drawing, Row
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


def statement(side: Side) -> str:
    """One sentence on what the checkpoint's encoder lacks, or that it has every part DiSAN has."""
    missing = lacks(side)
    if not missing:
        return f"{side.name} ({side.encoder}) has every part of DiSAN: directional token2token attention, " \
               f"fusion gates and source2token attention."
    return f"{side.name} ({side.encoder}) has no " + "; no ".join(missing) + "."


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


def drawing(a: Side, b: Side, window: tuple[int, int] | None = None) -> Drawing:
    """The comparison's rows: predictions; the attention of the blocks both have, A beside B on one lift
    scale, and their difference; the blocks only one has; how alike the two are against unrelated
    models; mean gates; source2token importance and its difference. ``window``: the [start, stop) of the
    tokens the token x token figures and the token bars show (None: the Attention page's first window, around
    the middle token)."""
    if a.sentence.tokens != b.sentence.tokens:
        raise ValueError("the two traces are of different token sequences")
    tokens = a.sentence.tokens
    if window is None:
        window = views.default_window(len(tokens), views.default_query(len(tokens)))
    shown = views.window_words(window, len(tokens))
    sides = (a, b)
    labels = [f"A: {a.name}", f"B: {b.name}"]
    rows = [Row({f"compare-prediction-{k}": figures.class_probabilities(
        s.prediction.probs, None if s.prediction.score is not None else s.prediction.label)
        for k, s in zip("ab", sides)}, "Predictions of A (left) and B (right)")]
    blocks = [{block.name: block for block in s.sentence.trace.blocks} for s in sides]
    same = [name for name in blocks[0] if name in blocks[1]
            and blocks[0][name].direction == blocks[1][name].direction]
    if same:
        rows.append(Row({f"compare-attention-{file_name(name)}": figures.attention_pair(
            mean_attention(blocks[0][name]), mean_attention(blocks[1][name]), tokens,
            np.asarray(blocks[0][name].mask), np.asarray(blocks[1][name].mask), (f"A · {name}", f"B · {name}"),
            scale="lift", window=window, title=shown.removeprefix(", "),
            width=views.panel_width(views.FULL, len(same))) for name in same},
            "Token2token attention of A (left) and B (right)",
            caption="Mean over features as lift over uniform: P × the number of keys the query row may attend; ×1 "
                    "is what attention spread evenly over them gives. A and B share one scale per block."))
        rows.append(Row({f"compare-diff-{file_name(name)}": figures.difference_heatmap(
            mean_attention(blocks[0][name]), mean_attention(blocks[1][name]), tokens, f"{name}: A − B{shown}",
            masks=(np.asarray(blocks[0][name].mask), np.asarray(blocks[1][name].mask)), scale="lift", window=window,
            width=views.panel_width(views.FULL, len(same))) for name in same},
            "Difference where both have the block", caption="Lift of A − lift of B (red: A attends more)."))
    for k, (label, side) in enumerate(zip(labels, blocks)):
        only = {name: block for name, block in side.items() if name not in same}
        if only:
            rows.append(Row({f"compare-attention-{'ab'[k]}-{file_name(name)}": figures.attention_heatmap(
                mean_attention(block), tokens, np.asarray(block.mask), f"{label} · {name}{shown}", scale="lift",
                window=window,
                width=views.panel_width(views.FULL, len(only))) for name, block in only.items()},
                f"{'AB'[k]}: token2token attention without a counterpart in {'BA'[k]}",
                caption="Mean over features as lift over uniform."))
    table = agreements(a, b)
    if len(table):
        rows.append(Row({"compare-agreement": table}, "How alike are A and B?",
                        caption=f"Kendall's τ over the cells, beside the τ of unrelated models: B's rows shuffled "
                                f"among their own keys, {NULL_DRAWS} times (each row keeps its values; which key gets "
                                "which is random). A τ inside that range says no more than chance does."))
    gates = {f"{label[:1]} · {name}": np.asarray(block.gate, dtype=float)
             for label, side in zip(labels, blocks) for name, block in side.items()}
    if gates:  # drawn as the Fusion gates page draws them
        rows.append(Row({"compare-gates": figures.mean_gate_bars(gates, tokens, markup.stop_words(tokens),
                                                                 window=window, shown=shown)},
                        "Fusion gates"))
    importance = {label[:1]: measures.token_importance(np.asarray(s.sentence.trace.source2token.probs))
                  for label, s in zip(labels, sides) if s.sentence.trace.source2token is not None}
    if importance:
        panels = {"compare-s2t": figures.token_bars(importance, tokens, f"source2token importance{shown}",
                                                     "mean probability", window=window)}
        if len(importance) == 2:
            panels["compare-s2t-diff"] = figures.token_bars({"A − B": importance["A"] - importance["B"]}, tokens,
                                                             f"source2token importance: A − B{shown}", "difference",
                                                             window=window)
        rows.append(Row(panels, "Source2token"))
    return Drawing(rows)
