"""Plotly figures of the analyses, in the style and with the escaping of :mod:`disan.render.figures`.

Every string from the user or a corpus (tokens, contexts, labels, checkpoint names) goes through
``figures.esc`` before it reaches a figure; markup is only ever added around escaped text.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative, sample_colorscale

from disan.render.figures import (
    CHOSEN,
    DIVERGING,
    MASKED_BG,
    MAX_TICKS,
    ORDINAL_SCALE,
    OTHERS,
    TEMPLATE,
    TICK_PX,
    class_bars_layout,
    esc,
    height_for,
    label_axis,
    plot_height,
    plot_room,
    tick_room,
)

PALETTE = qualitative.Plotly


def _finish(fig: go.Figure, title: str, height: int, **layout) -> go.Figure:
    """The figure titled (escaped), in the app's template and of the given height."""
    fig.update_layout(title=dict(text=esc(title)), template=TEMPLATE, height=height, **layout)
    return plot_room(fig)


def marked_context(before: str, word: str, after: str) -> str:
    """An occurrence's context escaped, the word in bold: ``before`` and ``after`` are the plain text around it
    (:func:`disan.analyses.corpus.context_parts`)."""
    return f"{esc(before)} <b>{esc(word)}</b> {esc(after)}".strip()


def ordered_colours(groups: Sequence[str], scale: Sequence[str]) -> list[str]:
    """A colour per group on a diverging scale by its place in ``scale`` (ordinal labels: very negative
    in red to very positive in blue, the middle grey), so that neighbouring labels get neighbouring colours."""
    places = [list(scale).index(g) / max(1, len(scale) - 1) for g in groups]
    return sample_colorscale(ORDINAL_SCALE, places)


def occurrence_scatter(coords: np.ndarray, groups: Sequence[str], hover: Sequence[str], explained: np.ndarray,
                       title: str, selected: int | None = None, order: Sequence[str] | None = None,
                       colours: Sequence[str] | None = None) -> go.Figure:
    """(N, 2) projected occurrences, one colour per group (a cluster or a gold label), the already
    escaped ``hover`` context on each point; the explained variance names the axes. ``selected``
    rings one occurrence; ``order`` is the groups' legend order (default: sorted), ``colours`` their colours
    in that order (default: the categorical palette).

    SVG markers, not WebGL (``Scattergl``): at the at most a few thousand points drawn here (a word's
    occurrences, an atlas's features) plotly draws them in a tenth of the time, without a WebGL context
    (which a browser without a GPU emulates slowly and which a page may run out of), and a figure
    downloaded as SVG keeps its points as vectors."""
    coords = np.asarray(coords, dtype=float)
    groups = np.asarray([str(g) for g in groups], dtype=object)
    hover = np.asarray(hover, dtype=object)
    fig = go.Figure()
    for c, group in enumerate(sorted(set(groups)) if order is None else order):
        idx = np.flatnonzero(groups == group)
        fig.add_trace(go.Scatter(
            x=coords[idx, 0], y=coords[idx, 1], mode="markers", name=f"{esc(group)} ({len(idx)})",
            marker=dict(size=7, opacity=0.75, color=PALETTE[c % len(PALETTE)] if colours is None else colours[c]),
            customdata=idx, hovertext=hover[idx], hovertemplate="#%{customdata}: %{hovertext}<extra></extra>"))
    if selected is not None:
        fig.add_trace(go.Scatter(x=coords[[selected], 0], y=coords[[selected], 1], mode="markers",
                                 name=f"selected #{selected}", hovertext=hover[[selected]],
                                 hovertemplate="%{hovertext}<extra></extra>",
                                 marker=dict(size=16, color="rgba(0,0,0,0)", line=dict(width=2, color="black"))))
    fig.update_xaxes(title=dict(text=f"PC 1 ({explained[0]:.1%} of the variance)"))
    fig.update_yaxes(title=dict(text=f"PC 2 ({explained[1]:.1%} of the variance)"))
    return _finish(fig, title, 560)


def prediction_change(before: Mapping[str, float], after: Mapping[str, float],
                      names: tuple[str, str] = ("before", "after"), title: str = "") -> go.Figure:
    """Class probabilities of two predictions as paired horizontal bars, in the model's label order, under
    ``title`` (none: no room kept for one)."""
    labels = list(before)
    fig = go.Figure([
        go.Bar(x=[float(probs[k]) for k in labels], y=[esc(k) for k in labels], orientation="h", name=esc(name),
               marker_color=colour, hovertemplate="%{y}: %{x:.4f}<extra>" + esc(name) + "</extra>")
        for name, probs, colour in zip(names, (before, after), (OTHERS, CHOSEN))
    ])
    fig.update_layout(template=TEMPLATE, barmode="group", **class_bars_layout(len(labels), 2, bool(title)))
    return fig.update_layout(title=dict(text=esc(title))) if title else fig


def measures_heatmap(values: np.ndarray, tokens: Sequence[str], measures: Sequence[str], title: str) -> go.Figure:
    """tokens (rows) x measures (columns); each column scaled by its largest |value| so that measures of
    different units sit side by side; the hover and the cell text give the raw value. NaN cells are grey."""
    values = np.asarray(values, dtype=float)  # (n, m)
    peak = np.nanmax(np.abs(values), axis=0, initial=0.0)
    scaled = values / np.where(peak > 0, peak, 1.0)
    height = height_for(len(tokens), per_row=26)
    plot = plot_height(height)
    rows = label_axis("token", tokens, "token", max_ticks=min(MAX_TICKS, tick_room(plot)))
    columns = [esc(m) for m in measures]  # a handful of names of ours: shown whole, not cut like tokens
    # the values written in the cells where a row is tall enough for a line of text; the hover gives them always
    readable = plot / max(1, len(tokens)) >= TICK_PX
    text = np.array([["" if np.isnan(v) or not readable else f"{v:.3g}" for v in row] for row in values],
                    dtype=object)
    fig = go.Figure(go.Heatmap(
        z=scaled, x=columns, y=rows.values, customdata=values, text=text, texttemplate="%{text}",
        zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING, hoverongaps=False,
        colorbar=dict(title=dict(text="÷ column max |·|")),
        hovertemplate="%{y} · %{x} = %{customdata:.4g}<extra></extra>"))
    fig.update_xaxes(type="category", side="top")
    fig.update_yaxes(**rows.layout(reverse=True))
    return _finish(fig, title, height, plot_bgcolor=MASKED_BG)


def histograms(series: Mapping[str, np.ndarray], title: str, value_title: str,
               reference: float | None = None, bins: int = 30) -> go.Figure:
    """Overlaid histograms of several samples (NaN left out), with an optional vertical reference line."""
    fig = go.Figure()
    for c, (name, values) in enumerate(series.items()):
        values = np.asarray(values, dtype=float)
        values = values[np.isfinite(values)]
        fig.add_trace(go.Histogram(x=values, name=f"{esc(name)} (n={len(values)})", opacity=0.6, nbinsx=bins,
                                   marker_color=PALETTE[c % len(PALETTE)]))
    if reference is not None:
        fig.add_vline(x=reference, line=dict(color="black", dash="dash"))
    fig.update_xaxes(title=dict(text=esc(value_title)))
    fig.update_yaxes(title=dict(text="count"))
    return _finish(fig, title, 380, barmode="overlay")


def estimate_bars(estimates: Mapping[str, Mapping[str, object]], title: str, value_title: str,
                  reference: float | None = None) -> go.Figure:
    """Grouped bars with 95% interval whiskers: one group per outer key (a block), one bar per inner key
    (a word class), each an estimate with its ``value``, ``low`` and ``high`` (as
    :class:`disan.analyses.stats.Estimate`); an optional horizontal reference line (e.g. 1 = uniform
    attention)."""
    inner = list(dict.fromkeys(k for group in estimates.values() for k in group))
    outer = list(estimates)
    fig = go.Figure()
    for c, key in enumerate(inner):
        est = [estimates[o].get(key) for o in outer]
        value = [e.value if e else None for e in est]
        fig.add_trace(go.Bar(
            x=[esc(o) for o in outer], y=value, name=esc(key), marker_color=PALETTE[c % len(PALETTE)],
            error_y=dict(type="data", symmetric=False, array=[e.high - e.value if e else 0 for e in est],
                         arrayminus=[e.value - e.low if e else 0 for e in est]),
            hovertemplate="%{x} · " + esc(key) + ": %{y:.4f}<extra></extra>"))
    if reference is not None:
        fig.add_hline(y=reference, line=dict(color="black", dash="dash"))
    fig.update_yaxes(title=dict(text=esc(value_title)))
    return _finish(fig, title, 380, barmode="group")


def correlation_heatmap(values: np.ndarray, rows: Sequence[str], columns: Sequence[str], title: str,
                        value_title: str, hover: np.ndarray | None = None) -> go.Figure:
    """A small matrix of correlations (rows x columns, values in [−1, 1]) on the diverging scale centred on 0,
    each value written in its cell; ``hover``, per cell, more text (an interval), escaped here. NaN cells are
    grey."""
    values = np.asarray(values, dtype=float)
    # a mean that rounds to zero is written 0.00, whichever side of it it lies
    text = np.array([["" if np.isnan(v) else f"{v:.2f}".replace("-0.00", "0.00") for v in row] for row in values],
                    dtype=object)
    more = np.full(values.shape, "", dtype=object) if hover is None else np.vectorize(esc, otypes=[object])(hover)
    fig = go.Figure(go.Heatmap(
        z=values, x=[esc(c) for c in columns], y=[esc(r) for r in rows], text=text, texttemplate="%{text}",
        customdata=more, zmin=-1, zmax=1, zmid=0, colorscale=DIVERGING, hoverongaps=False,
        colorbar=dict(title=dict(text=esc(value_title))),
        hovertemplate="%{y} · %{x}: %{z:.3f} %{customdata}<extra></extra>"))
    # the column names under the matrix, slanted: long names over the columns would run into the title
    fig.update_xaxes(type="category", tickangle=-30, automargin=True)
    fig.update_yaxes(type="category", autorange="reversed", automargin=True)
    return _finish(fig, title, height_for(len(rows), per_row=40, base=260, low=400), plot_bgcolor=MASKED_BG)
