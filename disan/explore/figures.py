"""Plotly figures of what DiSAN attends to, built from numpy arrays.

The app's pages only wire widgets to these functions, so every figure is a pure
function of arrays and strings. Axis convention (see :mod:`disan.nn.masks`): an
attention array is indexed ``[j, i]`` or ``[j, i, k]``; rows ``j`` are query
tokens, columns ``i`` attended tokens, ``k`` features.

Tokens and labels are untrusted user text, and plotly renders a subset of HTML in
tick labels, titles, legends and hover text, so every string that reaches a figure
goes through :func:`_esc` first. Token axes are numeric (0..n-1) with tick
labels, because a categorical axis would merge repeated tokens ("the ... the").
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import make_colorscale, sequential
from plotly.subplots import make_subplots

from disan.explore.tables import LENGTH_BINS, accuracy_by_length_table

# Starts at pure white so that a probability near 0 is still distinguishable from
# the grey background that masked (NaN) cells leave visible.
SEQUENTIAL = make_colorscale(["#ffffff"] + sequential.Blues[1:])
DIVERGING = "RdBu_r"      # negative blue, 0 white, positive red
MASKED_BG = "#b0b0b0"     # plot background: what NaN cells show
TEMPLATE = "plotly_white"
TICK_CHARS = 12           # longer tokens are cut with an ellipsis in tick labels


def _esc(text) -> str:
    """Plain text -> text plotly shows literally (its pseudo-HTML is not interpreted)."""
    return html.escape(str(text), quote=True)


def _short(text, limit: int = TICK_CHARS) -> str:
    """An escaped tick label; cut before escaping so that no entity is split."""
    text = str(text)
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return _esc(text)


def _height(rows: int, per_row: int = 22, base: int = 160, low: int = 320, high: int = 1600) -> int:
    """Figure height in pixels: grows with the number of rows, within readable bounds."""
    return int(min(high, max(low, base + per_row * rows)))


def _peak(*arrays: np.ndarray) -> float:
    """The largest finite value of the arrays, or 1 when there is none above 0 (an empty colour range)."""
    finite = [a[np.isfinite(a)] for a in arrays]
    top = max((float(a.max()) for a in finite if a.size), default=0.0)
    return top if top > 0 else 1.0


@dataclass(frozen=True)
class _Axis:
    """One heatmap axis: its title, the value of each position, and how hover names a position.

    Text axes are categorical with unique values ("query 3: the"), so repeated tokens stay apart
    and the hover reads the escaped value directly; no per-cell strings are built, which keeps a
    tokens x features heatmap cheap to build and to serialise.
    """
    title: str
    values: list               # one per position: escaped unique labels, or feature ids
    ticks: list[str] | None    # tick labels; None: plotly's own ticks (numeric feature axes)
    hover: str = "{ref}"       # how the hover template names a position, given %{x} or %{y}

    def layout(self, reverse: bool = False) -> dict:
        axis = dict(title=dict(text=self.title), showgrid=False, zeroline=False)
        if self.ticks is not None:
            axis.update(type="category", tickmode="array", tickvals=self.values, ticktext=self.ticks)
        if reverse:
            axis["autorange"] = "reversed"   # first row at the top
        return axis


def _label_axis(name: str, labels: Sequence[str], title: str | None = None) -> _Axis:
    """Positions named by text (tokens, class labels): hover "name k: label"."""
    values = [f"{name} {k}: {_esc(label)}".strip() for k, label in enumerate(labels)]
    return _Axis(title or name, values, [_short(label) for label in labels])


def _feature_axis(d: int, features: Sequence[int] | None = None) -> _Axis:
    """Feature positions: numeric 0..d-1, or a chosen subset/order as categories named by feature id."""
    if features is None:
        return _Axis("feature k", list(range(d)), None, "feature {ref}")
    ids = [str(int(k)) for k in features]
    return _Axis("feature k", ids, ids, "feature {ref}")


def _heatmap(z: np.ndarray, rows: _Axis, cols: _Axis, *, zmin=None, zmax=None, zmid=None,
             colorscale=SEQUENTIAL, fmt: str = ".4g", text: bool = False, showscale: bool = True) -> go.Heatmap:
    """The one heatmap trace every figure uses. Masked (NaN) cells have no hover.

    Hover text comes from the axes' escaped values, never from raw labels.
    """
    z = np.asarray(z, dtype=float)  # (rows, cols)
    hover = (f"{rows.hover.format(ref='%{y}')} → {cols.hover.format(ref='%{x}')} = %{{z:{fmt}}}<extra></extra>")
    values = None
    if text:  # small matrices only (confusion counts)
        values = np.array([["" if np.isnan(v) else format(v, fmt) for v in row] for row in z], dtype=object)
    return go.Heatmap(
        z=z, x=cols.values, y=rows.values, hovertemplate=hover,
        colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid, showscale=showscale, hoverongaps=False,
        text=values, texttemplate="%{text}" if text else None,
    )


def _heatmap_figure(trace: go.Heatmap, rows: _Axis, cols: _Axis, title: str, height: int) -> go.Figure:
    """A single heatmap with the first row at the top and masked cells showing the grey background."""
    fig = go.Figure(trace)
    fig.update_xaxes(**cols.layout())
    fig.update_yaxes(**rows.layout(reverse=True))
    return _finish(fig, title, height, plot_bgcolor=MASKED_BG)


def _finish(fig: go.Figure, title: str, height: int, **layout) -> go.Figure:
    fig.update_layout(title=dict(text=_esc(title)), template=TEMPLATE, height=height, **layout)
    return fig


def _masked(matrix: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """matrix with NaN where mask is False, so masked cells differ from small values."""
    return np.where(np.asarray(mask, dtype=bool), np.asarray(matrix, dtype=float), np.nan)


# ---------------------------------------------------------------- feature reductions

def reduce_features(probs: np.ndarray, mode: str | int) -> np.ndarray:
    """(n, n, d) -> (n, n): the mean or max over features, or feature ``k`` alone.

    Multi-dimensional attention has one distribution per feature; a 2-D view needs one number per cell.
    """
    probs = np.asarray(probs, dtype=float)  # (n, n, d)
    if mode == "mean":
        return probs.mean(axis=-1)
    if mode == "max":
        return probs.max(axis=-1)
    if isinstance(mode, (int, np.integer)) and not isinstance(mode, bool):
        if not 0 <= mode < probs.shape[-1]:
            raise ValueError(f"feature {mode} out of range for {probs.shape[-1]} features")
        return probs[..., int(mode)]
    raise ValueError(f"mode must be 'mean', 'max' or a feature index, not {mode!r}")


def feature_sharpness(probs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(d,) mean entropy (nats) of each feature's attention over the query rows that have a key.

    Lower is sharper: a feature that puts all its mass on one token scores 0. Rows
    without any valid key (the first token of the forward block) carry no
    distribution and are ignored; NaN for a feature when no row is valid.
    """
    mask = np.asarray(mask, dtype=bool)                     # (n, n)
    p = np.where(mask[..., None], np.asarray(probs, dtype=float), 0.0)  # (n, n, d)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    entropy = -plogp.sum(axis=1)                            # (n, d): per query j and feature k
    rows = mask.any(axis=1)                                 # (n,)
    if not rows.any():
        return np.full(p.shape[-1], np.nan)
    return entropy[rows].mean(axis=0)


def rank_features(probs: np.ndarray, mask: np.ndarray, top: int | None = None) -> list[int]:
    """Feature indices, sharpest (lowest entropy) first; ties keep feature order."""
    order = np.argsort(feature_sharpness(probs, mask), kind="stable")
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


# ---------------------------------------------------------------- attention figures

def attention_heatmap(matrix: np.ndarray, tokens: Sequence[str], mask: np.ndarray, title: str,
                      zmax: float | None = None) -> go.Figure:
    """(n, n) attention: rows = query token j (top to bottom), columns = attended token i.

    Masked cells are NaN and show the grey background, so "not allowed" never looks like "near 0".
    """
    z = _masked(matrix, mask)  # (n, n)
    rows, cols = _label_axis("query", tokens, "query token j"), _label_axis("attended", tokens, "attended token i")
    trace = _heatmap(z, rows, cols, zmin=0.0, zmax=_peak(z) if zmax is None else zmax)
    return _heatmap_figure(trace, rows, cols, title, _height(len(tokens)))


def attention_pair(fw: np.ndarray, bw: np.ndarray, tokens: Sequence[str], fw_mask: np.ndarray,
                   bw_mask: np.ndarray, titles: tuple[str, str] = ("forward", "backward")) -> go.Figure:
    """Forward and backward (n, n) attention side by side on one colour scale, so they compare directly."""
    zs = [_masked(fw, fw_mask), _masked(bw, bw_mask)]  # (n, n) each
    zmax = _peak(*zs)
    rows, cols = _label_axis("query", tokens, "query token j"), _label_axis("attended", tokens, "attended token i")
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[_esc(t) for t in titles])
    for c, z in enumerate(zs, start=1):
        fig.add_trace(_heatmap(z, rows, cols, zmin=0.0, zmax=zmax, showscale=c == 2), row=1, col=c)
        fig.update_xaxes(**cols.layout(), row=1, col=c)
        fig.update_yaxes(**rows.layout(reverse=True), row=1, col=c)
    fig.update_yaxes(title=None, row=1, col=2)
    return _finish(fig, "", _height(len(tokens)), plot_bgcolor=MASKED_BG)


def query_view(probs: np.ndarray, j: int, tokens: Sequence[str], mask: np.ndarray,
               features: Sequence[int] | None = None) -> go.Figure:
    """What query token j attends to, feature by feature: P[j, i, k] as features (y) x tokens (x).

    ``features`` restricts and orders the rows (e.g. :func:`rank_features`); columns j may not attend are NaN.
    """
    probs = np.asarray(probs, dtype=float)                     # (n, n, d)
    ids = list(range(probs.shape[-1])) if features is None else [int(k) for k in features]
    row_mask = np.asarray(mask, dtype=bool)[j]                 # (n,): keys of query j
    z = np.where(row_mask[None, :], probs[j][:, ids].T, np.nan)  # (len(ids), n)
    rows = _feature_axis(probs.shape[-1], features)
    cols = _label_axis("attended", tokens, "attended token i")
    title = f"query {j}: {tokens[j]}" + ("" if row_mask.any() else " (attends to no token)")
    trace = _heatmap(z, rows, cols, zmin=0.0, zmax=_peak(z))
    return _heatmap_figure(trace, rows, cols, title, _height(len(ids), per_row=14))


def difference_heatmap(fw: np.ndarray, bw: np.ndarray, tokens: Sequence[str],
                       title: str = "forward − backward") -> go.Figure:
    """fw − bw on a diverging scale centred at 0: red where forward attends more, blue where backward does."""
    z = np.asarray(fw, dtype=float) - np.asarray(bw, dtype=float)  # (n, n)
    rows, cols = _label_axis("query", tokens, "query token j"), _label_axis("attended", tokens, "attended token i")
    trace = _heatmap(z, rows, cols, zmid=0.0, colorscale=DIVERGING)
    return _heatmap_figure(trace, rows, cols, title, _height(len(tokens)))


# ---------------------------------------------------------------- gates and source2token

def gate_heatmap(gate: np.ndarray, tokens: Sequence[str], title: str) -> go.Figure:
    """(n, d) fusion gate F: tokens (y) x features (x); F near 1 keeps h, near 0 takes the attention output s."""
    gate = np.asarray(gate, dtype=float)  # (n, d)
    rows, cols = _label_axis("token", tokens, "token j"), _feature_axis(gate.shape[1])
    trace = _heatmap(gate, rows, cols, zmin=0.0, zmax=1.0)
    return _heatmap_figure(trace, rows, cols, title, _height(len(tokens)))


def _token_bars(series: Mapping[str, np.ndarray], tokens: Sequence[str], title: str, value_title: str,
                value_range: tuple[float, float] | None = None) -> go.Figure:
    """Horizontal bars, one group per token (first token at the top), one bar per series."""
    axis = _label_axis("token", tokens)
    fig = go.Figure([
        go.Bar(x=np.asarray(values, dtype=float), y=axis.values, orientation="h", name=_esc(name),
               hovertemplate="%{y} = %{x:.4f}")
        for name, values in series.items()
    ])
    fig.update_yaxes(**axis.layout(reverse=True))
    fig.update_xaxes(title=dict(text=_esc(value_title)), range=value_range)
    return _finish(fig, title, _height(len(tokens) * max(1, len(series)), per_row=14), barmode="group")


def mean_gate_bars(gates: Mapping[str, np.ndarray], tokens: Sequence[str]) -> go.Figure:
    """Per-token mean of each direction's (n, d) fusion gate, grouped by token (the paper's Fig. 5)."""
    means = {name: np.asarray(g, dtype=float).mean(axis=1) for name, g in gates.items()}  # (n,) each
    return _token_bars(means, tokens, "mean fusion gate per token", "mean gate F", (0.0, 1.0))


def source2token_heatmap(probs: np.ndarray, tokens: Sequence[str]) -> go.Figure:
    """(n, D) source2token probabilities: tokens (y) x features (x); each column is a distribution over tokens."""
    probs = np.asarray(probs, dtype=float)  # (n, D)
    rows, cols = _label_axis("token", tokens, "token i"), _feature_axis(probs.shape[1])
    trace = _heatmap(probs, rows, cols, zmin=0.0, zmax=_peak(probs))
    return _heatmap_figure(trace, rows, cols, "source2token attention", _height(len(tokens)))


def importance_bars(importance: np.ndarray, tokens: Sequence[str]) -> go.Figure:
    """(n,) token importance (:func:`token_importance`) as bars."""
    return _token_bars({"importance": importance}, tokens, "token importance (source2token, mean over features)",
                       "mean probability")


# ---------------------------------------------------------------- sentence encodings

def word_sense_heatmaps(vectors: Sequence[np.ndarray], labels: Sequence[str],
                        title: str = "attention vectors") -> go.Figure:
    """Vectors as 1 x D strips one above the other on one scale (the paper's Fig. 6).

    Non-negative vectors (probabilities) use the sequential scale from 0; signed ones a diverging scale at 0.
    """
    z = np.stack([np.ravel(np.asarray(v, dtype=float)) for v in vectors])  # (m, D)
    rows, cols = _label_axis("", labels, "sentence"), _feature_axis(z.shape[1])
    if np.nanmin(z) >= 0:
        trace = _heatmap(z, rows, cols, zmin=0.0, zmax=_peak(z))
    else:
        trace = _heatmap(z, rows, cols, zmid=0.0, colorscale=DIVERGING)
    fig = _heatmap_figure(trace, rows, cols, title, _height(len(labels), per_row=60, low=240))
    fig.update_traces(ygap=4)
    return fig


# ---------------------------------------------------------------- evaluation

def class_probabilities(probs: Mapping[str, float], predicted: str | None = None) -> go.Figure:
    """Horizontal bars of a prediction's class probabilities, in the model's label order (first at the top)."""
    labels = list(probs)
    colors = ["#1f77b4" if label == predicted else "#9ecae1" for label in labels]
    fig = go.Figure(go.Bar(x=[float(probs[k]) for k in labels], y=[_esc(k) for k in labels], orientation="h",
                           marker_color=colors, hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_xaxes(range=[0, 1], title=dict(text="probability"))
    fig = _finish(fig, "", 60 + 26 * len(labels))
    fig.update_layout(margin=dict(l=10, r=10, t=10, b=40))
    return fig


def confusion_heatmap(matrix: np.ndarray, labels: Sequence[str]) -> go.Figure:
    """(C, C) counts: rows = gold class, columns = predicted class, counts written in the cells."""
    z = np.asarray(matrix, dtype=float)  # (C, C)
    rows, cols = _label_axis("gold", labels, "gold"), _label_axis("predicted", labels, "predicted")
    trace = _heatmap(z, rows, cols, zmin=0.0, zmax=_peak(z), fmt=",.0f", text=True)
    return _heatmap_figure(trace, rows, cols, "confusion matrix", _height(len(labels), per_row=40))


def accuracy_by_length(lengths: np.ndarray, correct: np.ndarray, bins: Sequence[int] = LENGTH_BINS) -> go.Figure:
    """Accuracy per sentence-length bin (:func:`disan.tables.accuracy_by_length_table`), n on each bar."""
    table = accuracy_by_length_table(lengths, correct, bins)
    fig = go.Figure(go.Bar(
        x=table["bin"].tolist(), y=table["accuracy"].to_numpy(dtype=float), text=[f"n={n}" for n in table["n"]],
        hovertemplate="length %{x}: accuracy %{y:.4f} (%{text})<extra></extra>",
    ))
    fig.update_xaxes(title=dict(text="sentence length (tokens)"), type="category")
    fig.update_yaxes(title=dict(text="accuracy"), range=[0.0, 1.0])
    return _finish(fig, "accuracy by sentence length", 380)


def curves(history: Sequence[Mapping[str, float]], keys: Sequence[str]) -> go.Figure:
    """One line per metric in ``keys`` over epochs (an entry's ``epoch``, else its position from 1)."""
    epochs = [entry.get("epoch", k + 1) for k, entry in enumerate(history)]
    fig = go.Figure([
        go.Scatter(x=epochs, y=[entry.get(key) for entry in history], mode="lines+markers", name=_esc(key))
        for key in keys
    ])
    fig.update_xaxes(title=dict(text="epoch"))
    return _finish(fig, "training curves", 380)
