"""Two checkpoints on one sentence drawn (:mod:`disan.analyses.compare` compares them): both predictions,
each model's attention on one lift scale and their difference, how alike they are beside unrelated models,
gates and source2token, and what an encoder lacks, in words.

Reads a :class:`~disan.analyses.compare.Comparison` by its fields.
"""
from __future__ import annotations

import numpy as np

from disan.render import figures, markup, views
from disan.render.tables import file_name
from disan.render.views import Drawing, Row
from disan.inspect import measures


def statements(comparison) -> list[str]:
    """One sentence per checkpoint on what its encoder lacks, or that it has every part DiSAN has."""
    said = []
    for side, missing in zip((comparison.a, comparison.b), comparison.lacks):
        if not missing:
            said.append(f"{side.name} ({side.encoder}) has every part of DiSAN: directional token2token attention, "
                        f"fusion gates and source2token attention.")
        else:
            said.append(f"{side.name} ({side.encoder}) has no " + "; no ".join(missing) + ".")
    return said


def drawing(comparison, window: tuple[int, int] | None = None) -> Drawing:
    """The comparison's rows: predictions; the attention of the blocks both have, A beside B on one lift
    scale, and their difference; the blocks only one has; how alike the two are against unrelated
    models; mean gates; source2token importance and its difference. ``window``: the [start, stop) of the
    tokens the token x token figures and the token bars show (None: the Attention page's first window, around
    the middle token)."""
    a, b = comparison.a, comparison.b
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
            views.reduced(blocks[0][name], "mean"), views.reduced(blocks[1][name], "mean"), tokens,
            np.asarray(blocks[0][name].mask), np.asarray(blocks[1][name].mask), (f"A · {name}", f"B · {name}"),
            scale="lift", window=window, title=shown.removeprefix(", "),
            width=views.panel_width(views.FULL, len(same))) for name in same},
            "Token2token attention of A (left) and B (right)",
            caption="Mean over features as lift over uniform: P × the number of keys the query row may attend; ×1 "
                    "is what attention spread evenly over them gives. A and B share one scale per block."))
        rows.append(Row({f"compare-diff-{file_name(name)}": figures.difference_heatmap(
            views.reduced(blocks[0][name], "mean"), views.reduced(blocks[1][name], "mean"), tokens,
            f"{name}: A − B{shown}",
            masks=(np.asarray(blocks[0][name].mask), np.asarray(blocks[1][name].mask)), scale="lift", window=window,
            width=views.panel_width(views.FULL, len(same))) for name in same},
            "Difference where both have the block", caption="Lift of A − lift of B (red: A attends more)."))
    for k, (label, side) in enumerate(zip(labels, blocks)):
        only = {name: block for name, block in side.items() if name not in same}
        if only:
            rows.append(Row({f"compare-attention-{'ab'[k]}-{file_name(name)}": figures.attention_heatmap(
                views.reduced(block, "mean"), tokens, np.asarray(block.mask), f"{label} · {name}{shown}",
                scale="lift", window=window,
                width=views.panel_width(views.FULL, len(only))) for name, block in only.items()},
                f"{'AB'[k]}: token2token attention without a counterpart in {'BA'[k]}",
                caption="Mean over features as lift over uniform."))
    if len(comparison.agreement):
        rows.append(Row({"compare-agreement": comparison.agreement}, "How alike are A and B?",
                        caption=f"Kendall's τ over the cells, beside the τ of unrelated models: B's rows shuffled "
                                f"among their own keys, {comparison.draws} times (each row keeps its values; which "
                                "key gets which is random). A τ inside that range says no more than chance does."))
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
