"""Plotly figures of what DiSAN attends to, built from numpy arrays.

The app's pages only wire widgets to these functions, so every figure is a pure
function of arrays and strings. Axis convention (see :mod:`disan.nn.masks`): an
attention array is indexed ``[j, i]`` or ``[j, i, k]``; rows ``j`` are query
tokens, columns ``i`` attended tokens, ``k`` features.

Tokens and labels are untrusted user text, and plotly renders a subset of HTML in
tick labels, titles, legends and hover text, so every string that reaches a figure
goes through :func:`esc` first. Token axes are numeric (0..n-1) with tick
labels, because a categorical axis would merge repeated tokens ("the ... the").

Figures are built from plain trace and layout dicts in one step (``_figure``),
without plotly's per-property validation: validating costs 30 times more than
building, about 0.3 s on every rerun of the Attention page at 200 tokens, and
the dicts are written here, not taken from users.
"""
from __future__ import annotations

import html
import textwrap
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.colors import get_colorscale, make_colorscale, sample_colorscale, sequential

from disan.data.files import Summary
from disan.data.kinds import kind_of
from disan.render.tables import LENGTH_BINS, accuracy_by_length_table
from disan.inspect.measures import lift, mean_gate

# Starts at pure white so that a probability near 0 is still distinguishable from
# the grey background that masked (NaN) cells leave visible.
SEQUENTIAL = make_colorscale(["#ffffff"] + sequential.Blues[1:])
# negative blue, 0 white, positive red; resolved here, since the figures skip the validation that would
# turn a name like "RdBu_r" into colours (plotly.js knows no reversed names)
DIVERGING = get_colorscale("RdBu_r")
# ordered labels (sentiment from very negative to very positive): the red and blue of DIVERGING, reversed, with a
# grey middle in place of its white, which would vanish on the white background
ORDINAL_SCALE = [*sample_colorscale(DIVERGING, [0.9, 0.75]), "rgb(153, 153, 153)",
                 *sample_colorscale(DIVERGING, [0.25, 0.1])]
MASKED_BG = "#b0b0b0"     # plot background: what NaN cells show; the border of a token without a value
CHOSEN, OTHERS = "#1f77b4", "#9ecae1"  # bars: the predicted class (the prediction after a change), the rest
TEMPLATE = "plotly_white"
TICK_CHARS = 12           # longer tokens are cut with an ellipsis in tick labels
MAX_TICKS = 40            # a longer token axis labels every k-th position (hover still names every one)
FEATURE_TICKS = 25        # the same for an axis of features in a chosen order
STOP_STYLE = "color:#8c8c8c"  # tick labels of stop words: grey italics
STOP_CAPTION = "Grey italic labels and hatched bars: stop words (spaCy's English list)."  # under figures marking them
LIFT_RANGE = (1.1, 64.0)  # the lift colour range spans at least x1/1.1..x1.1 and at most x1/64..x64
SCALES = ("lift", "probability")  # how attention heatmaps are coloured (see _colouring)

# The room a figure has, in CSS pixels, at the 1600 x 1000 viewport the app is designed and audited for
# (tests/test_layout.py): across the main column, or in one of two columns (a pair model's premise and
# hypothesis side by side). Figures fit their titles, ticks and small multiples to the width they are given.
FULL_WIDTH = 1150
HALF_WIDTH = 540
TITLE_CHAR_PX = 8.5       # the average character of a 16-17 px bold title, in pixels, with room to spare
TITLE_PAD = 12            # pixels above a figure's title
SMALL_CHAR_PX = 7.5       # the same for 12-14 px text: subplot titles, annotations
TICK_PX = 18              # the room one tick label needs across its axis: a line of 12 px text and a gap
MARGINS_PX = 220          # what a heatmap's y tick labels and colour bar take of its width
PANEL_PX = 140            # the narrowest small multiple
MIN_PLOT_PX = 150         # the least height of any plot area (tests/test_layout.py audits it)
AXIS_PX = 120             # the most an x axis takes under its plot: vertical token labels of TICK_CHARS, a title
CLASS_BAR_PX = 26         # one bar of a class in a prediction chart, its gap included
SCORE_BIN = 0.25          # the width of a relatedness histogram's bins


def esc(text) -> str:
    """Plain text -> text plotly shows literally (its pseudo-HTML is not interpreted)."""
    return html.escape(str(text), quote=True)


def _short(text, limit: int = TICK_CHARS) -> str:
    """An escaped tick label; cut before escaping so that no entity is split."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return esc(text)


def fit(text, width_px: float, char_px: float = TITLE_CHAR_PX, lines: int = 3) -> str:
    """Escaped text in lines that fit ``width_px`` pixels (``_wrap``): titles wrap instead of running off
    the figure."""
    return _wrap(text, max(12, int(width_px / char_px)), lines)


def tick_room(length_px: float) -> int:
    """How many tick labels an axis of ``length_px`` pixels shows without them touching (at least 2)."""
    return max(2, int(length_px // TICK_PX))


def _wrap(text, width: int = 32, lines: int = 3) -> str:
    """Escaped text in lines of at most ``width`` characters joined by ``<br>`` (plotly's line break); past
    ``lines`` lines it is cut with an ellipsis (hover shows it whole)."""
    chunks = textwrap.wrap(str(text), width) or [""]
    if len(chunks) > lines:
        chunks = chunks[:lines]
        chunks[-1] = chunks[-1][:width - 1] + "…"
    return "<br>".join(esc(chunk) for chunk in chunks)


def height_for(rows: int, per_row: int = 22, base: int = 160, low: int = 320, high: int = 1600) -> int:
    """Figure height in pixels: grows with the number of rows, within readable bounds."""
    return int(min(high, max(low, base + per_row * rows)))


def peak(*arrays: np.ndarray) -> float:
    """The largest finite value of the arrays, or 1 when there is none above 0 (an empty colour range)."""
    finite = [a[np.isfinite(a)] for a in arrays]
    top = max((float(a.max()) for a in finite if a.size), default=0.0)
    return top if top > 0 else 1.0


@dataclass(frozen=True)
class _Axis:
    """One heatmap axis: its title, the value of each position, its ticks, and how hover names a position.

    Text axes are categorical with unique values ("query 3: the"), so repeated tokens stay apart
    and the hover reads the escaped value directly; no per-cell strings are built, which keeps a
    tokens x features heatmap cheap to build and to serialise.
    """
    title: str
    values: list                           # one per position: escaped unique labels, or feature ids
    ticks: tuple[list, list[str]] | None   # (tick values, tick labels); None: plotly's own (numeric axes)
    hover: str = "{ref}"                   # how the hover template names a position, given %{x} or %{y}

    def layout(self, reverse: bool = False) -> dict:
        axis = dict(title=dict(text=self.title), showgrid=False, zeroline=False)
        if self.ticks is not None:
            # horizontal labels, or vertical where they do not fit: never slanted, which would cross the neighbours
            axis.update(type="category", tickmode="array", tickvals=self.ticks[0], ticktext=self.ticks[1],
                        autotickangles=[0, 90])
        if reverse:
            axis["autorange"] = "reversed"   # first row at the top
        return axis


def _thinned(values: list, labels: list[str], max_ticks: int, anchor: int = 0) -> tuple[list, list[str]]:
    """Every k-th tick, counted from position ``anchor`` both ways, so that at most ``max_ticks`` are labelled
    and ``anchor`` is one of them."""
    step = max(1, -(-len(values) // max_ticks))
    start = anchor % step
    return values[start::step], labels[start::step]


def label_axis(name: str, labels: Sequence[str], title: str | None = None, first: int = 0,
                marked: Sequence[bool] | None = None, max_ticks: int = MAX_TICKS, anchor: int = 0) -> _Axis:
    """Positions named by text (tokens, class labels): hover "name k: label", k counted from ``first``.

    ``marked`` positions (stop words) get grey italic tick labels; where not every position can be labelled,
    position ``anchor`` (e.g. the tallest bar) is.
    """
    values = [f"{name} {first + k}: {esc(label)}".strip() for k, label in enumerate(labels)]
    ticks = [_short(label) for label in labels]
    if marked is not None:
        ticks = [f'<span style="{STOP_STYLE}"><i>{t}</i></span>' if m else t for t, m in zip(ticks, marked)]
    return _Axis(title or name, values, _thinned(values, ticks, max_ticks, anchor))


def _feature_axis(d: int, features: Sequence[int] | None = None, title: str = "feature k",
                  max_ticks: int = FEATURE_TICKS) -> _Axis:
    """Feature positions: numeric 0..d-1, or a chosen subset/order as categories named by feature id."""
    if features is None:
        return _Axis(title, list(range(d)), None, "feature {ref}")
    ids = [str(int(k)) for k in features]
    return _Axis(title, ids, _thinned(ids, ids, max_ticks), "feature {ref}")


def _heatmap(z: np.ndarray, rows: _Axis, cols: _Axis, *, zmin=None, zmax=None, zmid=None,
             colorscale=SEQUENTIAL, fmt: str = ".4g", text: bool = False, showscale: bool = True,
             colorbar: dict | None = None, customdata: np.ndarray | None = None, value: str | None = None,
             **extra) -> dict:
    """The one heatmap trace every figure uses (a dict for ``_figure``). Masked (NaN) cells have no hover.

    Hover text comes from the axes' escaped values, never from raw labels; ``value`` is how the hover
    writes a cell (default: its z). ``colorbar`` titles the colour scale; ``extra`` goes into the trace
    (its subplot axes, gaps).
    """
    # (rows, cols) float32 on the wire: half the bytes of float64 for the browser to receive, parse and restyle
    # (Streamlit copies every figure through JSON to theme it), and more digits than any hover shows
    z = np.asarray(z, dtype=np.float32)
    value = value or f"%{{z:{fmt}}}"
    hover = f"{rows.hover.format(ref='%{y}')} → {cols.hover.format(ref='%{x}')} = {value}<extra></extra>"
    trace = dict(type="heatmap", z=z, x=cols.values, y=rows.values, hovertemplate=hover, colorscale=colorscale,
                 showscale=showscale, hoverongaps=False, **extra)
    optional = dict(zmin=zmin, zmax=zmax, zmid=zmid, colorbar=colorbar, customdata=customdata)
    trace.update({k: v for k, v in optional.items() if v is not None})
    if text:  # small matrices only (confusion counts)
        trace["text"] = np.array([["" if np.isnan(v) else format(v, fmt) for v in row] for row in z], dtype=object)
        trace["texttemplate"] = "%{text}"
    return trace


def _figure(traces: Sequence[dict], title: str, height: int, width: float = FULL_WIDTH, **layout) -> go.Figure:
    """A figure from trace dicts and layout entries, titled (escaped, wrapped to ``width`` pixels) and in the
    app's template, built without validation (see the module's docstring)."""
    layout = {"template": pio.templates[TEMPLATE], "title": {"text": fit(title, width - 40)}, "height": height,
              **layout}
    return plot_room(go.Figure(data=list(traces), layout=layout, _validate=False))


def _heatmap_figure(trace: dict, rows: _Axis, cols: _Axis, title: str, height: int, width: float = FULL_WIDTH,
                    **layout) -> go.Figure:
    """A single heatmap with the first row at the top and masked cells showing the grey background."""
    return _figure([trace], title, height, width, xaxis=cols.layout(), yaxis=rows.layout(reverse=True),
                   plot_bgcolor=MASKED_BG, **layout)


def _panel_title(text: str, width_px: float, shorter: Sequence[str] = (), **where) -> dict:
    """An annotation that names a panel: ``text``, else the first of the ``shorter`` wordings that fits
    ``width_px`` pixels, else the last cut to fit, with the whole text on hover."""
    chars = max(6, int(width_px / SMALL_CHAR_PX))
    wordings = (text, *shorter)
    shown = _short(next((t for t in wordings if len(t) <= chars), wordings[-1]), chars)
    annotation = dict(text=shown, showarrow=False, **where)
    if len(str(text)) > chars:
        annotation["hovertext"] = esc(text)
    return annotation


def _grid(rows: int, cols: int, titles: Sequence[str] = (), hspace: float = 0.04, vspace: float = 0.1,
          figure_width: float = FULL_WIDTH, **axes) -> tuple[dict, list[dict]]:
    """Subplots: (layout entries, the axis references of each panel in row-major order).

    The layout holds every panel's x and y axis (their domains, anchored to each other, with ``axes``
    applied to all) and the panels' titles above them (escaped here, cut to the panel's width in a figure
    ``figure_width`` pixels wide).
    """
    layout, panels, annotations = {}, [], []
    width, height = (1 - hspace * (cols - 1)) / cols, (1 - vspace * (rows - 1)) / rows
    for k in range(rows * cols):
        r, c = divmod(k, cols)
        x0, y1 = c * (width + hspace), 1 - r * (height + vspace)
        suffix = "" if k == 0 else str(k + 1)
        # clipped: the last panel's edge may miss 0 or 1 by a rounding error
        layout[f"xaxis{suffix}"] = dict(domain=[max(0.0, x0), min(1.0, x0 + width)], anchor=f"y{suffix}", **axes)
        layout[f"yaxis{suffix}"] = dict(domain=[max(0.0, y1 - height), min(1.0, y1)], anchor=f"x{suffix}", **axes)
        panels.append(dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}"))
        if k < len(titles):
            # 6 px above the panel, so that the title does not touch it
            panel_px = max(60.0, (figure_width - MARGINS_PX) * width)
            annotations.append(_panel_title(titles[k], panel_px, x=x0 + width / 2, y=y1, xref="paper",
                                            yref="paper", xanchor="center", yanchor="bottom", yshift=6,
                                            font=dict(size=14)))
    return {**layout, "annotations": annotations}, panels


def top_margin(title: str, subtitle: str = "", panel_titles: bool = False) -> int:
    """Pixels above the plot for a title and subtitle of so many lines (``<br>``), and for the titles of
    subplots or the annotations above the plot."""
    # 10 px under the subtitle: the first row's tick label may stand out of the plot by half a line
    return TITLE_PAD + 24 * lines(title) + 20 * lines(subtitle) + 10 + (30 if panel_titles else 0)


def lines(text: str) -> int:
    """The lines of a plotly text (``<br>`` breaks them); 0 for no text."""
    return text.count("<br>") + 1 if text else 0


def title_layout(title: str) -> dict:
    """Where a title of so many lines sits: at the top of the figure, below a pad. Plotly moves a title of
    several lines up by part of a line each when it is anchored at its top, so the pad grows with them."""
    return dict(y=1.0, yanchor="top", yref="container", pad=dict(t=TITLE_PAD - 4 + 11 * (lines(title) - 1)))


def plot_room(fig: go.Figure, top: float | None = None) -> go.Figure:
    """The figure made tall enough for a plot of at least :data:`MIN_PLOT_PX` between its top margin
    (``top``, else its own) and its bottom one, which plotly grows to fit the x axis's tick labels (a
    token's, vertical) and title: :data:`AXIS_PX` at least."""
    margin = fig.layout.margin
    top = top if top is not None else margin.t if margin.t is not None else 100
    bottom = max(margin.b if margin.b is not None else 80, AXIS_PX)
    return fig.update_layout(height=max(fig.layout.height or 0, int(top + bottom + MIN_PLOT_PX)))


def describe(fig: go.Figure, source: str, width: float = FULL_WIDTH) -> go.Figure:
    """Name where a figure comes from (model, sentence) in its subtitle, so that a downloaded image says
    what it shows; the title above it says what is drawn (mode, feature). Both wrap to ``width`` pixels,
    and the top margin makes room for their lines."""
    subtitle = fit(source, width - 40, SMALL_CHAR_PX, lines=2)
    top = top_margin(fig.layout.title.text or "", subtitle, bool(fig.layout.annotations))
    fig.update_layout(title=dict(subtitle=dict(text=subtitle), **title_layout(fig.layout.title.text or "")),
                      margin=dict(t=max(top, fig.layout.margin.t or 0)))
    return plot_room(fig)


def _masked(matrix: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """matrix with NaN where mask is False, so masked cells differ from small values."""
    return np.where(np.asarray(mask, dtype=bool), np.asarray(matrix, dtype=float), np.nan)


# ---------------------------------------------------------------- attention figures

def lift_ticks(r: float, room: int) -> list[float]:
    """The lifts a colour bar spanning x1/2^r..x2^r labels: x1 and round steps each way, the largest first
    kept, with steps left out until at most ``room`` ticks remain and no two crowd each other (a step and
    the next are at least a ninth of the range apart)."""
    steps = [step for step in ((2, 4, 8, 16, 32, 64) if r >= 1 else (1.1, 1.25, 1.5, 2)) if np.log2(step) <= r + 1e-9]
    kept: list[float] = []
    for step in reversed(steps):  # from the largest: the range's end is always labelled
        if len(kept) * 2 + 3 > room:
            break
        if all(abs(np.log2(step) - np.log2(k)) >= 2 * r / 9 for k in kept) and np.log2(step) >= 2 * r / 9:
            kept.append(step)
    return sorted([1.0] + [t for step in kept for t in (step, 1 / step)])


def _lift_colours(zs: Sequence[np.ndarray], room: int = 13) -> tuple[list[np.ndarray], dict]:
    """log2 of lift matrices, for a diverging colour scale centred at x1 whose range is symmetric in
    ratio (x1/4 is as blue as x4 is red) and fits the data within :data:`LIFT_RANGE`; the colour bar is
    labelled in lifts, at most ``room`` of them (:func:`lift_ticks`). A lift of 0 takes the bluest colour;
    NaN (masked) stays NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = [np.log2(np.asarray(z, dtype=float)) for z in zs]
    finite = [np.abs(log[np.isfinite(log)]) for log in logs]
    top = max((float(f.max()) for f in finite if f.size), default=0.0)
    r = float(np.clip(top, np.log2(LIFT_RANGE[0]), np.log2(LIFT_RANGE[1])))
    ticks = lift_ticks(r, room)
    colorbar = dict(title=dict(text="lift ×"), tickvals=[float(np.log2(t)) for t in ticks],
                    ticktext=[f"×{t:.3g}" for t in ticks])
    return [np.clip(log, -r, r) for log in logs], dict(zmin=-r, zmax=r, colorscale=DIVERGING, colorbar=colorbar)


def _coloured(zs: Sequence[np.ndarray], scale: str, bar_px: float = 600) -> tuple[list[np.ndarray], list, dict]:
    """(what to draw, hover data, heatmap arguments) of matrices that share one colour scale.

    ``scale`` "probability": values from 0 on the sequential scale; "lift": values that are lifts
    (:func:`lift`) on the diverging log scale of ``_lift_colours``, the hover showing the lift itself,
    with as many ticks as a colour bar ``bar_px`` pixels long holds apart.
    """
    zs = [np.asarray(z, dtype=float) for z in zs]
    if scale == "probability":
        return zs, [None] * len(zs), dict(zmin=0.0, zmax=peak(*zs), colorscale=SEQUENTIAL,
                                          colorbar=dict(title=dict(text="P")))
    if scale == "lift":
        # a tick label every 30 px at most; the estimate of the bar's length may be 40 px long
        logs, kwargs = _lift_colours(zs, max(3, int((bar_px - 40) // 30)))
        return logs, [z.astype(np.float32) for z in zs], dict(kwargs, value="×%{customdata:.3g}")
    raise ValueError(f"scale must be one of {SCALES}, not {scale!r}")


def _span(n: int, window: tuple[int, int] | None) -> slice:
    """The positions a token window [start, stop) shows; None: all n."""
    if window is None:
        return slice(0, n)
    start, stop = int(window[0]), int(window[1])
    if not 0 <= start < stop <= n:
        raise ValueError(f"token window {window} does not fit {n} tokens")
    return slice(start, stop)


def _attention_values(matrix: np.ndarray, mask: np.ndarray, scale: str, window) -> np.ndarray:
    """(n, n) attention on the chosen scale, masked cells NaN, cut to the window (lift counts every key of
    the row, inside the window or not)."""
    mask = np.asarray(mask, dtype=bool)
    values = lift(matrix, mask) if scale == "lift" else np.asarray(matrix, dtype=float)
    cut = _span(mask.shape[0], window)
    return _masked(values, mask)[cut, cut]


def _token_axes(tokens: Sequence[str], window, max_ticks: int = MAX_TICKS,
                across: int | None = None) -> tuple[_Axis, _Axis]:
    """(query rows, attended columns) axes of the window's tokens, numbered by their position in the sentence;
    at most ``max_ticks`` labels on the rows and ``across`` (default: the same) on the columns."""
    cut = _span(len(tokens), window)
    shown = list(tokens)[cut]
    return (label_axis("query", shown, "query token j", cut.start, max_ticks=max_ticks),
            label_axis("attended", shown, "attended token i", cut.start,
                       max_ticks=max_ticks if across is None else across))


def plot_height(height: float) -> float:
    """Roughly the pixels a figure of ``height`` leaves its plot, under the title and over the x tick labels."""
    return max(60.0, height - 160)


def attention_heatmap(matrix: np.ndarray, tokens: Sequence[str], mask: np.ndarray, title: str,
                      zmax: float | None = None, *, scale: str = "probability", window=None,
                      width: float = FULL_WIDTH) -> go.Figure:
    """(n, n) attention: rows = query token j (top to bottom), columns = attended token i.

    Masked cells are NaN and show the grey background, so "not allowed" never looks like "near 0".
    ``scale``: "probability" or "lift" (:func:`lift`, computed here from the mask); ``window``: the
    [start, stop) of the tokens shown; ``width``: the pixels the figure has.
    """
    cut = _span(len(tokens), window)
    height = height_for(cut.stop - cut.start, high=900)
    (z,), data, colours = _coloured([_attention_values(matrix, mask, scale, window)], scale, plot_height(height))
    if zmax is not None and scale == "probability":
        colours["zmax"] = zmax
    rows, cols = _token_axes(tokens, window, min(MAX_TICKS, tick_room(plot_height(height))),
                             min(MAX_TICKS, tick_room(width - MARGINS_PX)))
    trace = _heatmap(z, rows, cols, customdata=data[0], **colours)
    return _heatmap_figure(trace, rows, cols, title, height, width)


def attention_pair(fw: np.ndarray, bw: np.ndarray, tokens: Sequence[str], fw_mask: np.ndarray,
                   bw_mask: np.ndarray, titles: tuple[str, str] = ("forward", "backward"), *,
                   scale: str = "probability", window=None, title: str = "", width: float = FULL_WIDTH) -> go.Figure:
    """Forward and backward (n, n) attention side by side on one colour scale, so they compare directly.

    ``scale``, ``window`` and ``width`` as in :func:`attention_heatmap`.
    """
    cut = _span(len(tokens), window)
    height = height_for(cut.stop - cut.start, high=900)
    zs, data, colours = _coloured([_attention_values(fw, fw_mask, scale, window),
                                   _attention_values(bw, bw_mask, scale, window)], scale, plot_height(height))
    rows, cols = _token_axes(tokens, window, min(MAX_TICKS, tick_room(plot_height(height))),
                             min(MAX_TICKS, tick_room((width - MARGINS_PX) / 2)))
    layout, panels = _grid(1, 2, titles, figure_width=width)
    traces = [_heatmap(z, rows, cols, customdata=custom, showscale=c == 1, **colours, **panel)
              for c, (z, custom, panel) in enumerate(zip(zs, data, panels))]
    layout["xaxis"].update(cols.layout())
    layout["xaxis2"].update(cols.layout())
    layout["yaxis"].update(rows.layout(reverse=True))
    layout["yaxis2"].update(rows.layout(reverse=True), matches="y", showticklabels=False, title=None)
    return _figure(traces, title, height, width, plot_bgcolor=MASKED_BG, **layout)


def feature_grid(panels: Sequence[tuple[str, np.ndarray, np.ndarray]], tokens: Sequence[str], columns: int, *,
                 scale: str = "lift", window=None, title: str = "", width: float = FULL_WIDTH) -> go.Figure:
    """Small multiples: one small (n, n) heatmap per (panel title, matrix, mask), at most ``columns`` to a row
    and no more than fit ``width`` pixels (panels at least :data:`PANEL_PX` wide), all on one colour scale
    (bertviz's model view, with features in place of heads)."""
    if not panels:
        raise ValueError("a feature grid needs at least one panel")
    columns = max(1, min(columns, int((width - MARGINS_PX) // PANEL_PX)))
    rows_n = -(-len(panels) // columns)
    panel_px = (width - MARGINS_PX) / columns
    row_px = min(240.0, panel_px) + 50  # 50 px between rows leaves the panel titles clear of the row above
    zs, data, colours = _coloured([_attention_values(m, mask, scale, window) for _, m, mask in panels], scale,
                                  row_px * rows_n)
    rows, cols = _token_axes(tokens, window, min(10, tick_room(row_px - 50)), min(10, tick_room(panel_px)))
    layout, refs = _grid(rows_n, columns, [name for name, _, _ in panels], hspace=0.015,
                         vspace=50 / (row_px * rows_n), figure_width=width)
    for annotation in layout["annotations"]:
        annotation["font"] = dict(size=12)
    traces = []
    for k, (z, custom, ref) in enumerate(zip(zs, data, refs)):
        r, c = divmod(k, columns)
        traces.append(_heatmap(z, rows, cols, customdata=custom, showscale=k == 0, **colours, **ref))
        # token labels on the outer axes only: the panels share their tokens
        suffix = ref["xaxis"][1:]
        # vertical: a horizontal label at a panel's edge would run into the next panel's first one
        layout[f"xaxis{suffix}"].update(cols.layout(), title=None, showticklabels=r == rows_n - 1, tickangle=90)
        layout[f"yaxis{suffix}"].update(rows.layout(reverse=True), title=None, showticklabels=c == 0)
    return _figure(traces, title, int(200 + row_px * rows_n), width, plot_bgcolor=MASKED_BG, **layout)


def query_view(probs: np.ndarray, j: int, tokens: Sequence[str], mask: np.ndarray,
               features: Sequence[int] | None = None, *, scale: str = "probability", window=None,
               title: str | None = None, width: float = FULL_WIDTH) -> go.Figure:
    """What query token j attends to, feature by feature: P[j, i, k] as features (y) x tokens (x).

    ``features`` restricts and orders the rows (e.g. by entropy); columns j may not attend are NaN;
    ``window`` cuts the columns. Lift: :func:`lift` of row j (P × its keys). ``width``: the pixels
    the figure has.
    """
    probs = np.asarray(probs)                                  # (n, n, d)
    ids = list(range(probs.shape[-1])) if features is None else [int(k) for k in features]
    row_mask = np.asarray(mask, dtype=bool)[j]                 # (n,): keys of query j
    row = probs[j:j + 1][..., ids]                             # (1, n, len(ids)): query j's row
    values = (lift(row, row_mask[None]) if scale == "lift" else row.astype(float))[0].T  # (len(ids), n)
    cut = _span(len(tokens), window)
    height = height_for(len(ids), per_row=14)
    (z,), data, colours = _coloured([np.where(row_mask[None, :], values, np.nan)[:, cut]], scale,
                                    plot_height(height))
    rows = _feature_axis(probs.shape[-1], features, max_ticks=min(FEATURE_TICKS, tick_room(plot_height(height))))
    cols = label_axis("attended", list(tokens)[cut], "attended token i", cut.start,
                      max_ticks=min(MAX_TICKS, tick_room(width - MARGINS_PX)))
    if title is None:
        title = f"query {j}: {tokens[j]}" + ("" if row_mask.any() else " (attends to no token)")
    trace = _heatmap(z, rows, cols, customdata=data[0], **colours)
    return _heatmap_figure(trace, rows, cols, title, height, width)


def difference_heatmap(fw: np.ndarray, bw: np.ndarray, tokens: Sequence[str], title: str = "forward − backward",
                       *, masks: tuple[np.ndarray, np.ndarray] | None = None, scale: str = "probability",
                       window=None, width: float = FULL_WIDTH) -> go.Figure:
    """fw − bw on a diverging scale centred at 0: red where forward attends more, blue where backward does.

    With ``masks`` (the two blocks' masks), cells that either block may not attend are NaN: only
    attention both blocks could pay is compared. With ``scale`` "lift" each side is a lift
    (:func:`lift`), which needs the masks.
    """
    if scale == "lift":
        if masks is None:
            raise ValueError("the difference of lifts needs both blocks' masks")
        fw, bw = lift(fw, masks[0]), lift(bw, masks[1])
    elif scale != "probability":
        raise ValueError(f"scale must be one of {SCALES}, not {scale!r}")
    z = np.asarray(fw, dtype=float) - np.asarray(bw, dtype=float)  # (n, n)
    if masks is not None:
        z = _masked(z, np.asarray(masks[0], dtype=bool) & np.asarray(masks[1], dtype=bool))
    cut = _span(len(tokens), window)
    height = height_for(cut.stop - cut.start, high=900)
    rows, cols = _token_axes(tokens, window, min(MAX_TICKS, tick_room(plot_height(height))),
                             min(MAX_TICKS, tick_room(width - MARGINS_PX)))
    bar = dict(title=dict(text="Δ lift" if scale == "lift" else "Δ P"))
    trace = _heatmap(z[cut, cut], rows, cols, zmid=0.0, colorscale=DIVERGING, colorbar=bar)
    return _heatmap_figure(trace, rows, cols, title, height, width)


# ---------------------------------------------------------------- gates and source2token

def gate_order(gate: np.ndarray) -> list[int]:
    """Features by their mean gate over tokens, highest first: the features that keep h, then those
    that take the attention output s. Ties keep feature order."""
    return [int(k) for k in np.argsort(-np.asarray(gate, dtype=float).mean(axis=0), kind="stable")]


def _gate_range(*values: np.ndarray, least: float = 0.02) -> float:
    """Half-width of a colour or axis range centred at F = 0.5 that holds every value (at most 0.5)."""
    spread = max((float(np.nanmax(np.abs(np.asarray(v, dtype=float) - 0.5))) for v in values if np.size(v)),
                 default=0.0)
    return float(np.clip(spread, least, 0.5))


def gate_heatmap(gate: np.ndarray, tokens: Sequence[str], title: str, *, sort: bool = True,
                 stop: Sequence[bool] | None = None, width: float = FULL_WIDTH) -> go.Figure:
    """(n, d) fusion gate F: tokens (y) x features (x); F near 1 keeps h, near 0 takes the attention output s.

    Diverging colours centred at F = 0.5 (white), the range fitted to the data so that small
    deviations show; ``sort`` orders the features by :func:`gate_order`; ``stop`` marks stop words;
    ``width``: the pixels the figure has, which bound its feature labels.
    """
    gate = np.asarray(gate, dtype=float)  # (n, d)
    order = gate_order(gate) if sort else None
    height = height_for(len(tokens), high=900)
    rows = label_axis("token", tokens, "token j", marked=stop, max_ticks=min(MAX_TICKS, tick_room(plot_height(height))))
    cols = _feature_axis(gate.shape[1], order, "feature k, by mean F (high → low)" if sort else "feature k",
                         max_ticks=min(FEATURE_TICKS, tick_room(width - MARGINS_PX)))
    m = _gate_range(gate)
    trace = _heatmap(gate if order is None else gate[:, order], rows, cols, zmin=0.5 - m, zmax=0.5 + m,
                     colorscale=DIVERGING, fmt=".3f", colorbar=dict(title=dict(text="F")))
    return _heatmap_figure(trace, rows, cols, title, height, width)


def token_bars(series: Mapping[str, np.ndarray], tokens: Sequence[str], title: str, value_title: str,
                value_range: tuple[float, float] | None = None, base: float = 0.0,
                stop: Sequence[bool] | None = None, width: float = FULL_WIDTH, window=None) -> go.Figure:
    """Horizontal bars from ``base``, one group per token (first token at the top), one bar per series;
    ``stop`` tokens get hatched bars and grey labels; ``width``: the pixels the figure has; ``window``: the
    [start, stop) of the tokens shown (numbered by their place in the sentence)."""
    cut = _span(len(tokens), window)
    series = {name: np.asarray(values, dtype=float)[cut] for name, values in series.items()}
    tokens, stop = list(tokens)[cut], None if stop is None else list(stop)[cut]
    # 14 px a bar, a token's group at most 28 px: four series (two models' two blocks) stay readable in the
    # height two take; at least a tick label's room, so that every token is labelled up to the tallest figure
    height = height_for(len(tokens), per_row=max(TICK_PX, 14 * min(2, max(1, len(series)))))
    deviations = np.abs(np.stack([np.asarray(v, dtype=float) for v in series.values()]) - base)  # (series, n)
    tallest = int(np.nanargmax(np.nanmax(deviations, axis=0))) if np.isfinite(deviations).any() else 0
    axis = label_axis("token", tokens, first=cut.start, marked=stop, anchor=tallest,  # where not every token is
                      max_ticks=min(MAX_TICKS, tick_room(plot_height(height))))  # labelled, the tallest bar's is
    marker = {} if stop is None else dict(pattern=dict(shape=["/" if m else "" for m in stop]))
    bars = []
    for name, values in series.items():
        values = np.asarray(values, dtype=float)
        bar = dict(type="bar", x=values - base, y=axis.values, orientation="h", name=esc(name), customdata=values,
                   marker=marker, hovertemplate="%{y} = %{customdata:.4f}")
        if base:
            bar["base"] = base
        bars.append(bar)
    xaxis = dict(title=dict(text=esc(value_title)), **({"range": list(value_range)} if value_range else {}))
    return _figure(bars, title, height, width, barmode="group", xaxis=xaxis, yaxis=axis.layout(reverse=True))


def mean_gate_bars(gates: Mapping[str, np.ndarray], tokens: Sequence[str],
                   stop: Sequence[bool] | None = None, width: float = FULL_WIDTH, window=None,
                   shown: str = "") -> go.Figure:
    """Per-token mean of each direction's (n, d) fusion gate, grouped by token (the paper's Fig. 5).

    Bars start at 0.5, so each token's deviation from an even mix of h and s is the bar; the axis
    fits the deviations. ``stop`` words are hatched; ``window`` as in :func:`token_bars`, ``shown`` saying
    it in the title.
    """
    means = {name: mean_gate(g) for name, g in gates.items()}  # (n,) each
    m = 1.15 * _gate_range(*means.values())
    title = ("mean fusion gate per token, from 0.5" + shown
             + (" (hatched: stop words)" if stop is not None and any(stop) else ""))
    return token_bars(means, tokens, title, "mean gate F", (0.5 - m, 0.5 + m), base=0.5, stop=stop, width=width,
                      window=window)


def _vline(x: float, **line) -> dict:
    """A vertical line across the plot at data position x (a layout shape)."""
    return dict(type="line", x0=x, x1=x, xref="x", y0=0, y1=1, yref="paper", line=line)


def _halves(halves: Sequence[str], d: int, figure_width: float = FULL_WIDTH) -> dict:
    """Layout entries that mark equal halves (thirds, ...) of a feature axis of d positions, each named at the
    top (cut to its share of a figure ``figure_width`` pixels wide), with dashed lines between them: the
    blocks whose outputs a 2·d_h vector concatenates."""
    width = d / len(halves)
    room = (figure_width - MARGINS_PX) / len(halves) - 10
    shapes = [_vline(k * width - 0.5, color="black", width=2, dash="dash") for k in range(1, len(halves))]
    spans = [f"{int(k * width)}–{int((k + 1) * width) - 1}" for k in range(len(halves))]
    # in a narrow figure the block's feature range stays and the word "features" goes, before any cut
    annotations = [_panel_title(f"{name}: features {span}", room, [f"{name} {span}"],
                                x=(k + 0.5) * width - 0.5, y=1.0, yref="paper", yanchor="bottom", yshift=4)
                   for k, (name, span) in enumerate(zip(halves, spans))]
    return dict(shapes=shapes, annotations=annotations)


def source2token_heatmap(probs: np.ndarray, tokens: Sequence[str], halves: Sequence[str] = (),
                         width: float = FULL_WIDTH) -> go.Figure:
    """(n, D) source2token probabilities: tokens (y) x features (x); each column is a distribution over tokens.

    ``halves``: the names of the blocks whose outputs make up the features, in order (DiSAN: forward,
    backward), marked on the feature axis; ``width``: the pixels the figure has.
    """
    probs = np.asarray(probs, dtype=float)  # (n, D)
    height = height_for(len(tokens), high=900)
    rows = label_axis("token", tokens, "token i", max_ticks=min(MAX_TICKS, tick_room(plot_height(height))))
    cols = _feature_axis(probs.shape[1])
    trace = _heatmap(probs, rows, cols, zmin=0.0, zmax=peak(probs), colorbar=dict(title=dict(text="P")))
    marks = dict(_halves(halves, probs.shape[1], width), margin=dict(t=110)) if halves else {}
    return _heatmap_figure(trace, rows, cols, "source2token attention", height, width, **marks)


def importance_bars(importance: np.ndarray, tokens: Sequence[str], width: float = FULL_WIDTH) -> go.Figure:
    """(n,) token importance (:func:`~disan.inspect.measures.token_importance`) as bars, with the uniform 1/n marked."""
    fig = token_bars({"importance": importance}, tokens, "token importance (source2token, mean over features)",
                      "mean probability", width=width)
    uniform = 1 / max(1, len(tokens))
    fig.update_layout(shapes=[_vline(uniform, color="grey", dash="dot")],
                      # above the plot, where no bar can be under it
                      annotations=[dict(x=uniform, y=1, yref="paper", yanchor="bottom", xanchor="left",
                                        showarrow=False, text="uniform 1/n")])
    return fig


# ---------------------------------------------------------------- sentence encodings

def word_sense_heatmaps(vectors: Sequence[np.ndarray], labels: Sequence[str],
                        title: str = "attention vectors", halves: Sequence[str] = ()) -> go.Figure:
    """Vectors as 1 x D strips one above the other on one scale (the paper's Fig. 6).

    Non-negative vectors (probabilities) use the sequential scale from 0; signed ones a diverging scale at 0.
    Row labels are the whole sentences, wrapped (hover shows them uncut); ``halves`` as in
    :func:`source2token_heatmap`.
    """
    z = np.stack([np.ravel(np.asarray(v, dtype=float)) for v in vectors])  # (m, D)
    values = [esc(label) for label in labels]  # the hover names a row by its whole label
    rows, cols = _Axis("sentence", values, (values, [_wrap(label) for label in labels])), _feature_axis(z.shape[1])
    if np.nanmin(z) >= 0:
        trace = _heatmap(z, rows, cols, zmin=0.0, zmax=peak(z), colorbar=dict(title=dict(text="P")), ygap=4)
    else:
        trace = _heatmap(z, rows, cols, zmid=0.0, colorscale=DIVERGING, colorbar=dict(title=dict(text="value")),
                         ygap=4)
    marks = _halves(halves, z.shape[1]) if halves else {}
    return _heatmap_figure(trace, rows, cols, title, height_for(len(labels), per_row=70, low=260), **marks)


# ---------------------------------------------------------------- data

def label_balance(summary: Summary, name: str) -> go.Figure:
    """The labels of a file before training on it: rows per class as bars, the count on each (classify,
    pair), or a histogram of the relatedness scores in bins of :data:`SCORE_BIN` from 1 to K."""
    if kind_of(summary.kind).scored:
        edges = np.arange(1.0, len(summary.labels) + SCORE_BIN / 2, SCORE_BIN)
        counts, _ = np.histogram(summary.scores, edges)  # the last bin holds K itself
        bar = {"type": "bar", "x": (edges[:-1] + edges[1:]) / 2, "y": counts, "width": SCORE_BIN * 0.9,
               "customdata": np.stack([edges[:-1], edges[1:]], axis=1),
               "hovertemplate": "scores %{customdata[0]:.2f}–%{customdata[1]:.2f}: %{y} rows<extra></extra>"}
        title = f"relatedness scores of {name}: {summary.rows} rows"
        levels = list(range(1, len(summary.labels) + 1))
        xaxis = {"title": {"text": "score"}, "range": [1 - SCORE_BIN / 2, levels[-1] + SCORE_BIN / 2],
                 "tickvals": levels}
    else:
        axis = label_axis("class", summary.labels, "label")
        bar = {"type": "bar", "x": axis.values, "y": summary.counts, "text": summary.counts, "textposition": "auto",
               "hovertemplate": "%{x}: %{y} rows<extra></extra>"}
        title = f"label balance of {name}: {summary.rows} rows, {len(summary.labels)} classes"
        xaxis = axis.layout()
    return _figure([bar], title, 360, xaxis=xaxis, yaxis={"title": {"text": "rows"}, "rangemode": "tozero"})


# ---------------------------------------------------------------- evaluation

def class_probabilities(probs: Mapping[str, float], predicted: str | None = None) -> go.Figure:
    """Horizontal bars of a prediction's class probabilities, in the model's label order (first at the top)."""
    labels = list(probs)
    colors = [CHOSEN if label == predicted else OTHERS for label in labels]
    bar = dict(type="bar", x=[float(probs[k]) for k in labels], y=[esc(k) for k in labels], orientation="h",
               marker=dict(color=colors), hovertemplate="%{y}: %{x:.4f}<extra></extra>")
    return _figure([bar], "class probabilities", **class_bars_layout(len(labels)))


def class_bars_layout(classes: int, series: int = 1, titled: bool = True) -> dict:
    """Height, margins and axes of horizontal class bars (first class at the top), from what the chart holds:
    :data:`CLASS_BAR_PX` a bar for every class and series, the plot at least :data:`MIN_PLOT_PX` high
    whatever the number of classes, and above it a one-line title (where ``titled``) and, for several series,
    a legend row."""
    top = (60 if titled else 12) + (28 if series > 1 else 0)
    plot = max(MIN_PLOT_PX, CLASS_BAR_PX * classes * series)
    # under the plot: the probabilities' tick labels and the axis title, as plotly lays them out
    layout = dict(height=top + plot + 70, margin=dict(l=10, r=10, t=top, b=70),
                  yaxis=dict(type="category", autorange="reversed"),
                  xaxis=dict(range=[0, 1], title=dict(text="probability")))
    if series > 1:  # in one row under the title, clear of the bars
        layout["legend"] = dict(orientation="h", x=0, xanchor="left", y=1, yanchor="bottom")
    return layout


def confusion_heatmap(matrix: np.ndarray, labels: Sequence[str]) -> go.Figure:
    """(C, C) counts: rows = gold class, columns = predicted class, counts written in the cells."""
    z = np.asarray(matrix, dtype=float)  # (C, C)
    rows, cols = label_axis("gold", labels, "gold"), label_axis("predicted", labels, "predicted")
    trace = _heatmap(z, rows, cols, zmin=0.0, zmax=peak(z), fmt=",.0f", text=True)
    return _heatmap_figure(trace, rows, cols, "confusion matrix", height_for(len(labels), per_row=40))


def accuracy_by_length(lengths: np.ndarray, correct: np.ndarray, bins: Sequence[int] = LENGTH_BINS) -> go.Figure:
    """Accuracy per sentence-length bin (:func:`disan.render.tables.accuracy_by_length_table`), n on each bar."""
    table = accuracy_by_length_table(lengths, correct, bins)
    bar = dict(type="bar", x=table["bin"].tolist(), y=table["accuracy"].to_numpy(dtype=float),
               text=[f"n={n}" for n in table["n"]], hovertemplate="length %{x}: accuracy %{y:.4f} (%{text})<extra></extra>")
    return _figure([bar], "accuracy by sentence length", 380,
                   xaxis=dict(title=dict(text="sentence length (tokens)"), type="category"),
                   yaxis=dict(title=dict(text="accuracy"), range=[0.0, 1.0]))


def curves(history: Sequence[Mapping[str, float]], keys: Sequence[str]) -> go.Figure:
    """One line per metric in ``keys`` over epochs (an entry's ``epoch``, else its position from 1).

    Losses, errors (a relatedness model's MSE) and the other metrics (accuracy, Pearson r, ...) live on
    different scales, so they get separate panels, losses on top. Epochs are whole numbers on the axis,
    and a single epoch is a point in the middle of the axis, not a line on a 0-2 range.
    """
    epochs = [entry.get("epoch", k + 1) for k, entry in enumerate(history)]
    kind = lambda key: "loss" if "loss" in key else "error" if key.endswith(("mse", "mae")) else "metrics"  # noqa: E731
    titles = [t for t in ("loss", "error", "metrics") if any(kind(k) == t for k in keys)]
    groups = [[k for k in keys if kind(k) == t] for t in titles]
    layout, refs = _grid(max(1, len(groups)), 1, titles, vspace=0.12)
    traces = [dict(type="scatter", x=epochs, y=[entry.get(key) for entry in history], mode="lines+markers",
                   name=esc(key), marker=dict(size=8), **ref)
              for group, ref in zip(groups, refs) for key in group]
    ticks = {}
    if epochs:
        ticks = dict(range=[min(epochs) - 0.5, max(epochs) + 0.5], tick0=1, dtick=max(1, -(-len(epochs) // 10)))
    for row, (ref, name) in enumerate(zip(refs, titles)):
        suffix = ref["xaxis"][1:]
        layout[f"xaxis{suffix}"].update(ticks, showticklabels=row == len(refs) - 1)
        if suffix:
            layout[f"xaxis{suffix}"]["matches"] = "x"  # one epoch axis for both panels
        layout[f"yaxis{suffix}"]["title"] = dict(text=name)
    layout[f"xaxis{refs[-1]['xaxis'][1:]}"]["title"] = dict(text="epoch")
    return _figure(traces, "training curves", 260 + 200 * len(groups), **layout)
