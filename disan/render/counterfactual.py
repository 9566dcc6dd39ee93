"""Counterfactuals drawn (:mod:`disan.analyses.counterfactual` makes them): the prediction before and after
an edit or a knockout, the attention change, and the change per dropped token (occlusion).

Reads a :class:`~disan.analyses.counterfactual.Counterfactual` and the occlusion table by their fields; the
model's kind names what is predicted (:func:`disan.render.kinds.look_of`).
"""
from __future__ import annotations

import bisect
from collections.abc import Sequence

import numpy as np
import pandas as pd

from disan.data.kinds import kind_of
from disan.render import charts, figures, views
from disan.render.kinds import look_of
from disan.render.tables import file_name
from disan.render.views import Drawing, Row


def _prediction_row(kind: str, result, names: tuple[str, str], key: str) -> Row:
    first, second = result.prediction_before, result.prediction_after
    title = f"{look_of(kind).outcome} {first.score:.2f} → {second.score:.2f}" if kind_of(kind).scored else ""
    fig = charts.prediction_change(first.probs, second.probs, names, title)
    return Row({key: fig}, f"Prediction: {first.label} → {second.label}")


def edit_drawing(kind: str, result, window: tuple[int, int] | None = None) -> Drawing:
    """Predictions before and after the edit, then per DiSA block the change of the mean attention on the
    tokens both sentences share (red: more attention after the edit). ``kind``: the model's kind.
    ``window``: the [start, stop) of the sentence's tokens the heatmaps show, of which they draw the shared
    ones (None: the Attention page's first window, around the middle shared token)."""
    rows = [_prediction_row(kind, result, ("before", "after"), "cf-edit-prediction")]
    shared, attention = result.aligned.tokens, result.aligned.attention
    if attention and shared:
        if window is None:
            window = views.default_window(len(shared), views.default_query(len(shared)))
        else:  # the shared tokens inside the sentence's window, at least one (the edited token may be all of it)
            kept = result.aligned.positions  # positions in the sentence, ascending
            start = min(bisect.bisect_left(kept, window[0]), len(kept) - 1)
            window = (start, max(start + 1, bisect.bisect_left(kept, window[1])))
        rows.append(Row({f"cf-edit-{file_name(name)}": figures.difference_heatmap(
            after, before, shared, f"{name}: after − before{views.window_words(window, len(shared))}", window=window,
            width=views.panel_width(views.FULL, len(attention)))
            for name, (before, after) in attention.items()},
            "Attention change on the shared tokens (mean over features; grey: masked in either)"))
    return Drawing(rows)


def occlusion_drawing(kind: str, tokens: Sequence[str], table: pd.DataFrame) -> Drawing:
    """The occlusion table (largest drop first) and the change per token of the sentence, ``tokens``, in
    sentence order. ``kind``: the model's kind."""
    followed = look_of(kind).followed
    by_position = table.sort_values("position")
    bars = figures.token_bars({"change": by_position["change"].to_numpy()}, tokens,
                              f"change in the {followed} when the token is dropped", "change", width=views.HALF)
    return Drawing([Row({"cf-occlusion-table": table, "cf-occlusion-bars": bars}, "Occlusion: drop each token")])


def knockout_drawing(kind: str, result, blocks: Sequence[str], window: tuple[int, int] | None = None) -> Drawing:
    """Predictions with and without the knockout, and each knocked-out block's attention after it
    (removed edges grey, as masked ones) next to its change. ``kind``: the model's kind. ``window``: the
    [start, stop) of the tokens the heatmaps show (None: the Attention page's first window, around the first
    key knocked out)."""
    rows = [_prediction_row(kind, result, ("without knockout", "with knockout"), "cf-knockout-prediction")]
    tokens = result.before.tokens
    for x, y in zip(result.before.trace.blocks, result.after.trace.blocks):
        if x.name not in blocks:
            continue
        key = file_name(x.name)
        after = views.reduced(y, "mean")
        span = window
        if span is None:  # a longer sentence: the window of the Attention page around the first key knocked out
            removed = np.flatnonzero((np.asarray(x.mask) & ~np.asarray(y.mask)).any(axis=0))
            centre = int(removed[0]) if removed.size else views.default_query(len(tokens))
            span = views.default_window(len(tokens), centre)
        shown = views.window_words(span, len(tokens))
        rows.append(Row({
            f"cf-knockout-{key}": figures.attention_heatmap(after, tokens, np.asarray(y.mask),
                                                            f"{x.name} with the knockout{shown}", window=span,
                                                            width=views.HALF),
            f"cf-knockout-{key}-change": figures.difference_heatmap(
                after, views.reduced(x, "mean"), tokens, f"{x.name}: with − without{shown}",
                window=span, width=views.HALF),
        }, f"{x.name} DiSA"))
    return Drawing(rows)
