"""What each page of the app draws, defined once.

A view is a function from traced sentence(s) and an options dataclass (the page's widget choices;
its defaults are the page's defaults) to a :class:`Drawing`: the page's figures, tables, notes (why
there is nothing to draw) and HTML (the shaded sentence) by key, in drawing order, laid out in rows. The pages only turn widgets into options and draw the result;
``python -m disan latency`` and the robustness tests call the same functions, so what they time and
check is what the app shows. The choice lists the widgets offer (modes, block names, ranked features,
words) come from here too.

To add a view: write ``def my_view(sentence, options=MyOptions()) -> Drawing`` and its options
dataclass, and register it in :data:`VIEWS`. Keys are unique within a drawing and file-safe: the app
uses them as Streamlit keys and as the names of downloaded images.

Axis convention (see :mod:`disan.nn.masks`): attention arrays are ``[j, i]`` or ``[j, i, k]``,
rows ``j`` the query token, columns ``i`` the attended token; masks come from the trace.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import html
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from disan.render import figures, markup, notebook
from disan.render.tables import differing_features, file_name
from disan.inspect import measures, senses

if TYPE_CHECKING:  # the traces are read by their fields: drawing them needs no torch
    from disan.inspect.pipeline import SentenceTrace, TraceResult

# What the app shows before the user types anything: the paper's case-study sentence (Fig. 4 and 5)
# and a SICK-like pair for the sentence-pair models.
PRESET_SENTENCE = "Families have some dogs in front of a carousel"
PRESET_PAIR = ("A man is pouring a glass of tea", "A man is drinking tea")

MODES = ("mean", "max", "one feature", "sharpest features")  # how the Attention page reduces features
SCALES = figures.SCALES   # how attention is coloured: lift over uniform (the default) or probability
TOP_RANKED = 12           # the sharpest features drawn, ranked, and offered in "sharpest features" mode
GRID = 6                  # the sharpest features per block in the small multiples
QUERY_FEATURES = 40       # the features (sharpest for the query first) in the per-query view
WINDOW = 60               # a longer sentence's heatmaps show this many tokens at a time, around the query


@dataclass(frozen=True)
class Note:
    """A panel of plain text: why there is nothing to draw. The app shows it literally (no Markdown)."""
    text: str


@dataclass(frozen=True)
class Html:
    """A panel of HTML built from escaped text only (:mod:`disan.render.markup`)."""
    body: str


Panel = go.Figure | pd.DataFrame | Note | Html


@dataclass(frozen=True)
class Row:
    """Panels (figures, tables, notes, HTML) drawn side by side, under an optional subheader and caption."""
    panels: dict[str, Panel]
    title: str | None = None
    caption: str | None = None


class Drawing(Mapping):
    """What a view draws: its rows in order; as a mapping, every panel by key in drawing order."""

    def __init__(self, rows: Sequence[Row]):
        self.rows = tuple(rows)
        self._panels: dict[str, Panel] = {}
        for row in self.rows:
            for key, panel in row.panels.items():
                if key in self._panels:
                    raise ValueError(f"two panels of one drawing are keyed {key!r}")
                self._panels[key] = panel

    def __getitem__(self, key: str) -> Panel:
        return self._panels[key]

    def __iter__(self):
        return iter(self._panels)

    def __len__(self) -> int:
        return len(self._panels)

    @property
    def figures(self) -> dict[str, go.Figure]:
        """The plotly figures by key, in drawing order (tables, notes and HTML left out)."""
        return {key: panel for key, panel in self._panels.items() if isinstance(panel, go.Figure)}

    def _repr_html_(self) -> str:
        """In Jupyter: every row's title, caption and panels in drawing order, as the page lays them out."""
        return "<div>" + "".join(row_html(row) for row in self.rows) + "</div>"


def panel_html(panel: Panel) -> str:
    """One panel as notebook HTML: a figure (:func:`disan.render.notebook.figure_html`), a table (pandas'
    own HTML, cut to its display.max_rows), markup (escaped text already) or a note (escaped here)."""
    if isinstance(panel, go.Figure):
        return notebook.figure_html(panel)
    if isinstance(panel, pd.DataFrame):
        return panel._repr_html_()
    if isinstance(panel, Html):
        return f"<div>{panel.body}</div>"
    return f"<p><i>{html.escape(panel.text)}</i></p>"


def row_html(row: Row) -> str:
    """A row as notebook HTML: its title, caption, then its panels side by side where they fit."""
    head = f"<h4>{html.escape(row.title)}</h4>" if row.title else ""
    note = f"<p>{html.escape(row.caption)}</p>" if row.caption else ""
    cells = "".join(f'<div style="flex: 1 1 {figures.HALF_WIDTH}px; min-width: 0">{panel_html(p)}</div>'
                    for p in row.panels.values())
    return f'{head}{note}<div style="display: flex; flex-wrap: wrap">{cells}</div>'


FULL, HALF = figures.FULL_WIDTH, figures.HALF_WIDTH  # the width a view is drawn at (pair models: HALF)


def panel_width(width: float, count: int) -> float:
    """The pixels each of ``count`` panels of a row gets in ``width``: a share where that is at least
    :data:`~disan.render.figures.HALF_WIDTH` (side by side), else the whole width (one above the other, see :func:`rows_of`)."""
    return width / count if width / count >= HALF else width


def rows_of(panels: dict[str, Panel], width: float, title: str | None = None,
            caption: str | None = None) -> list[Row]:
    """The panels side by side in one row where each gets :func:`panel_width`'s share of ``width``, else one
    row each (the first with the title and caption)."""
    if len(panels) < 2 or panel_width(width, len(panels)) < width:
        return [Row(panels, title, caption)]
    return [Row({key: panel}, title if k == 0 else None, caption if k == 0 else None)
            for k, (key, panel) in enumerate(panels.items())]


class Unavailable(ValueError):
    """A view cannot be drawn from these inputs; the message tells the user why."""


# ---------------------------------------------------------------- labels and choices

def token_label(tokens: Sequence[str], j: int) -> str:
    """How a token is offered in a selector: "3 · dogs" (the position keeps repeated tokens apart)."""
    return f"{j} · {tokens[j]}"


def shorten(text: str, limit: int = 50) -> str:
    """A sentence cut to at most ``limit`` characters, at a space where there is one, with an ellipsis."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def source(sentence: SentenceTrace) -> str:
    """Where a sentence's figures come from, for their subtitles: the model and the sentence, shortened."""
    return f"model {sentence.model or '?'} · “{shorten(sentence.text)}”"


def block_names(trace) -> list[str]:
    """The names of the trace's DiSA blocks, in order (empty for the baselines)."""
    return [block.name for block in trace.blocks]


def find_block(trace, name: str | None):
    """The block called ``name``; None: the first block."""
    if name is None:
        return trace.blocks[0]
    for block in trace.blocks:
        if block.name == name:
            return block
    raise ValueError(f"no DiSA block is named {name!r}; the blocks are {block_names(trace)}")


# What is measured of a block's probabilities, once per trace: a cached trace is drawn on every rerun, and at
# 200 tokens each measure is a pass over n²·d values. {id(probs): {what: value}}, kept while the probabilities live.
_MEASURED: dict[int, dict] = {}


def measured(block, what, compute):
    """``compute()``, the measure ``what`` of a block's probabilities, computed at its first call for this trace."""
    key = id(block.probs)
    if key not in _MEASURED:
        _MEASURED[key] = {}
        weakref.finalize(block.probs, _MEASURED.pop, key, None)  # before the id can be reused
    found = _MEASURED[key]
    if what not in found:
        found[what] = compute()
    return found[what]


def entropy(block) -> np.ndarray:
    """(n, d) :func:`~disan.inspect.measures.query_entropy` of a block, computed once per trace (at 200 tokens the
    costliest step of a drawing; about 1 % of the probabilities' size)."""
    return measured(block, "entropy", lambda: measures.query_entropy(np.asarray(block.probs), np.asarray(block.mask)))


def reduced(block, reduction: str | int) -> np.ndarray:
    """(n, n) :func:`~disan.inspect.measures.reduce_features` of a block, computed once per trace and reduction
    (the heatmaps, the shading and the blocks' comparison each draw it); read-only, as it is shared."""
    def compute():
        values = measures.reduce_features(np.asarray(block.probs), reduction)
        values.flags.writeable = False
        return values
    return measured(block, ("reduced", reduction), compute)


def sharpest_features(trace, block: str | None = None, top: int | None = TOP_RANKED) -> list[int]:
    """The ``top`` features of a block (None: the first) with the sharpest attention (lowest mean entropy
    over the query rows), sharpest first."""
    b = find_block(trace, block)
    return measures.rank_features(np.asarray(b.probs), np.asarray(b.mask), top=top, entropy=entropy(b))


def feature_label(trace, block: str | None, k: int, query: int | None = None) -> str:
    """How a feature is offered in a feature picker: its index and its entropy, from the query token j
    (``query``) where j attends any token in the block, else its mean over the sentence's query tokens."""
    b = find_block(trace, block)
    if query is not None and np.asarray(b.mask)[query].any():
        return f"k = {k} · entropy {entropy(b)[query, k]:.2f} nats at query {query}"
    sharpness = measures.feature_sharpness(np.asarray(b.probs), np.asarray(b.mask), entropy(b))[k]
    return f"k = {k} · mean entropy {sharpness:.2f} nats"


def feature_choices(trace, block: str | None, query: int) -> list[int]:
    """Every feature of a block (None: the first), sharpest first, for the "one feature" picker: by the
    entropy of the query token's attention where it attends any token in the block (the order of
    :func:`query_features`), else by the mean entropy over the sentence (:func:`sharpest_features`)."""
    b = find_block(trace, block)
    if np.asarray(b.mask)[query].any():
        return query_features(b, query, top=None)
    return sharpest_features(trace, b.name, top=None)


def query_features(block, j: int, top: int | None = QUERY_FEATURES) -> list[int]:
    """The ``top`` features whose attention from query j is sharpest (lowest entropy), sharpest first."""
    return [int(k) for k in np.argsort(entropy(block)[j], kind="stable")[:top]]


def default_query(n: int) -> int:
    """The query token shown first: the middle one, which has earlier tokens for the forward block and
    later ones for the backward block."""
    return n // 2


def default_window(n: int, query: int) -> tuple[int, int] | None:
    """The tokens a heatmap shows first: all of them up to :data:`WINDOW`, else WINDOW tokens around the query."""
    if n <= WINDOW:
        return None
    start = min(max(0, query - WINDOW // 2), n - WINDOW)
    return start, start + WINDOW


def window_words(window: tuple[int, int] | None, n: int) -> str:
    """A window in a figure's title: ", tokens 3–62 of 126", or "" for the whole sentence."""
    return "" if window is None else f", tokens {window[0]}–{window[1] - 1} of {n}"


def shade_choices(trace) -> dict[str, str]:
    """What the sentence can be shaded by (key -> label): the attention each token receives in each block,
    its source2token importance, its mean fusion gate in each block."""
    choices = {f"received {b.name}": f"attention received, {b.name}" for b in trace.blocks}
    if trace.source2token is not None:
        choices["source2token"] = "source2token importance"
    choices.update({f"gate {b.name}": f"mean fusion gate, {b.name}" for b in trace.blocks})
    return choices


def shading(sentence: SentenceTrace, key: str, reduction: str | int = "mean") -> markup.Shading:
    """One value per token for :func:`markup.shaded_sentence`, named by a key of :func:`shade_choices`.

    "received <block>": the attention the token receives, of the features reduced by ``reduction``,
    ÷ what uniform attention would give it (:func:`disan.inspect.measures.received_lift`, as the
    Attribution and Case study pages measure it): 1 is as much as uniform attention gives; a token no
    query may attend has no value. "source2token": n x its importance (1 is 1/n).
    "gate <block>": its mean fusion gate, centred at 0.5.
    """
    tr = sentence.trace
    kind, _, name = key.partition(" ")
    if key == "source2token" and tr.source2token is not None:
        importance = measures.token_importance(np.asarray(tr.source2token.probs))
        return markup.Shading("source2token importance, relative to uniform (1/n)",
                              importance * len(importance), 1.0, ratio=True)
    if kind == "received" and name in block_names(tr):
        block = find_block(tr, name)
        received = rescaled_received_lift(reduced(block, reduction), block.mask)
        return markup.Shading(f"attention received in the {name} block ({_received_text(reduction)}), "
                              f"÷ what uniform attention would give", received, 1.0, ratio=True)
    if kind == "gate" and name in block_names(tr):
        gate = measures.mean_gate(find_block(tr, name).gate)
        return markup.Shading(f"mean fusion gate F in the {name} block (1 keeps h, 0 takes s)", gate, 0.5,
                              ratio=False)
    raise ValueError(f"cannot shade by {key!r}; choose one of {list(shade_choices(tr))}")


def _reduction_text(reduction: str | int) -> str:
    """How a title names a reduction over features."""
    return f"{reduction} over features" if isinstance(reduction, str) else f"feature k = {reduction}"


def rescaled_received_lift(reduced: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(n,) :func:`disan.inspect.measures.received_lift` of (n, n) attention reduced over features, each
    query's row first rescaled to sum to 1 (:func:`disan.inspect.measures.rescale_rows`: a no-op but for
    the max over features, whose rows sum to more than 1 and would make every token receive more than
    uniform)."""
    return measures.received_lift(measures.rescale_rows(reduced, mask), mask)


def _received_text(reduction: str | int) -> str:
    """How a title names the attention of :func:`rescaled_received_lift`."""
    return _reduction_text(reduction) + (", each query's row rescaled to sum to 1" if reduction == "max" else "")


# ---------------------------------------------------------------- single-sentence views

@dataclass(frozen=True)
class AttentionOptions:
    """The Attention page's widgets; the defaults are the page's."""
    mode: str = "mean"          # one of MODES
    feature: int | None = None  # "one feature" and "sharpest features": the chosen k (None: the sharpest, see _reduction)
    rank_by: str | None = None  # the block whose entropy ranks features for those modes (None: the first)
    query: int | None = None    # the query token j of the per-feature views (None: the middle token)
    scale: str = "lift"         # one of SCALES
    window: tuple[int, int] | None = None  # the [start, stop) of the tokens the heatmaps show (None: default_window)
    shade: str | None = None    # a key of shade_choices (None: the first)


def _reduction(trace, options: AttentionOptions, query: int) -> str | int:
    """What :func:`disan.inspect.measures.reduce_features` gets for the chosen mode: "mean", "max" or a
    feature (by default the sharpest: at the query token j in "one feature" mode, over the sentence in
    "sharpest features" mode)."""
    if options.mode in ("mean", "max"):
        return options.mode
    if options.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {options.mode!r}")
    if options.feature is not None:
        return options.feature
    if options.mode == "one feature":
        return feature_choices(trace, options.rank_by, query)[0]
    return sharpest_features(trace, options.rank_by)[0]


_NO_KEY = {"forward": "it has no earlier token", "backward": "it has no later token",
           "diag": "there is no other token"}


@dataclass(frozen=True)
class _Attention:
    """What every panel of the Attention page reads, worked out once from the sentence and the options."""
    sentence: SentenceTrace
    options: AttentionOptions
    reduction: str | int                 # what measures.reduce_features gets
    query: int                           # the query token j
    window: tuple[int, int] | None       # the tokens the heatmaps show
    masks: list[np.ndarray]              # (n, n) bool per block
    probs: list[np.ndarray]              # (n, n, d_h) per block
    what: str                            # the reduction in words, for titles
    scale: str                           # the colour scale in words
    shown: str                           # the window in words ("" for the whole sentence)

    @property
    def blocks(self):
        return self.sentence.trace.blocks

    def reduced(self) -> list[np.ndarray]:
        """(n, n) attention of each block, features reduced as the options say."""
        return [reduced(block, self.reduction) for block in self.blocks]


def _attention(sentence: SentenceTrace, options: AttentionOptions) -> _Attention:
    tr, n = sentence.trace, len(sentence.tokens)
    if options.scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, not {options.scale!r}")
    j = default_query(n) if options.query is None else options.query
    if not 0 <= j < n:
        raise ValueError(f"query token {j} is out of range for {n} tokens")
    reduction = _reduction(tr, options, j)
    window = default_window(n, j) if options.window is None else options.window
    what = _reduction_text(reduction) + (f" (the sharpest in {options.rank_by or tr.blocks[0].name})"
                                         if options.mode == "sharpest features" else "")
    return _Attention(sentence, options, reduction, j, window,
                      [np.asarray(block.mask, dtype=bool) for block in tr.blocks],
                      [np.asarray(block.probs) for block in tr.blocks], what,
                      "lift over uniform" if options.scale == "lift" else "probability",
                      window_words(window, len(sentence.tokens)))


def attention_heatmaps(sentence: SentenceTrace, options: AttentionOptions = AttentionOptions(),
                       width: float = FULL) -> go.Figure:
    """Both blocks' attention side by side (the paper's Fig. 4), features reduced as the options say, in a
    figure ``width`` pixels wide."""
    a = _attention(sentence, options)
    first, second = a.blocks
    m1, m2 = a.reduced()
    fig = figures.attention_pair(m1, m2, sentence.tokens, a.masks[0], a.masks[1],
                                 titles=(f"{first.name} DiSA", f"{second.name} DiSA"), scale=options.scale,
                                 window=a.window, title=f"{a.what}, {a.scale}{a.shown}", width=width)
    return figures.describe(fig, source(sentence), width)


def sharpest_grid(sentence: SentenceTrace, options: AttentionOptions = AttentionOptions(),
                  width: float = FULL) -> go.Figure:
    """The :data:`GRID` sharpest features of each block as small multiples, titled by block and k, as many to a
    row as fit ``width`` pixels."""
    a = _attention(sentence, options)
    tr = sentence.trace
    fig = figures.feature_grid(
        [(f"{block.name} · k = {k}", p[..., k], m)
         for block, p, m in zip(a.blocks, a.probs, a.masks) for k in sharpest_features(tr, block.name, GRID)],
        sentence.tokens, GRID, scale=options.scale, window=a.window,
        title=f"the {GRID} sharpest features of each block (lowest mean entropy), {a.scale}{a.shown}",
        width=width)
    return figures.describe(fig, source(sentence), width)


def ranked_grid(sentence: SentenceTrace, options: AttentionOptions = AttentionOptions(),
                width: float = FULL) -> go.Figure:
    """"sharpest features" mode: the :data:`TOP_RANKED` features of the ranking block (``options.rank_by``) with the
    lowest mean entropy as small multiples in rank order, each titled by its rank, k and mean entropy, the chosen
    one marked, as many to a row as fit ``width`` pixels."""
    a = _attention(sentence, options)
    b = find_block(sentence.trace, options.rank_by)
    k = [x.name for x in a.blocks].index(b.name)
    sharpness = measures.feature_sharpness(a.probs[k], a.masks[k], entropy(b))  # (d_h,) mean entropy
    ranked = sharpest_features(sentence.trace, b.name)
    fig = figures.feature_grid(
        # short: a title wider than a small multiple (figures.PANEL_PX) is cut
        [(f"{'▶' if f == a.reduction else ''}#{r + 1} k={f} H={sharpness[f]:.2f}", a.probs[k][..., f],
          a.masks[k]) for r, f in enumerate(ranked)],
        sentence.tokens, GRID, scale=options.scale, window=a.window,
        title=f"{b.name}: its {len(ranked)} sharpest features, #1 first (H: mean entropy, nats), {a.scale}{a.shown}",
        width=width)
    return figures.describe(fig, source(sentence), width)


def query_panel(sentence: SentenceTrace, block: str | None = None,
                options: AttentionOptions = AttentionOptions(), width: float = FULL) -> go.Figure | Note:
    """What the query token attends to in one block (None: the first), its :data:`QUERY_FEATURES` sharpest
    features first; a note when the query may attend no token in that block."""
    a = _attention(sentence, options)
    b = find_block(sentence.trace, block)
    k = [x.name for x in a.blocks].index(b.name)
    j, tokens = a.query, sentence.tokens
    if not a.masks[k][j].any():
        return Note(f"In the {b.name} block, query {j} {markup.quoted(tokens[j])} attends to no token: "
                    f"{_NO_KEY.get(b.direction, 'it may attend no token')}.")
    features = query_features(b, j)
    fig = figures.query_view(a.probs[k], j, tokens, a.masks[k], features, scale=options.scale, window=a.window,
                             title=f"{b.name} · query {j}: {tokens[j]} · {len(features)} sharpest features, {a.scale}",
                             width=width)
    return figures.describe(fig, source(sentence), width)


def blocks_compared(sentence: SentenceTrace, options: AttentionOptions = AttentionOptions(),
                    width: float = FULL) -> go.Figure:
    """The two blocks compared. Where they may attend the same cells (DiSAN without directions), the
    first block's attention minus the second's on those cells. Where they never do (DiSAN's forward
    block attends earlier tokens, the backward block later ones), what each token receives in each
    block, ÷ what uniform attention would give it (:func:`disan.inspect.measures.received_lift`)."""
    a = _attention(sentence, options)
    first, second = a.blocks
    m1, m2 = a.reduced()
    if (a.masks[0] & a.masks[1]).any():
        fig = figures.difference_heatmap(m1, m2, sentence.tokens, f"{first.name} − {second.name}: {a.what}, "
                                         f"{a.scale}{a.shown}", masks=(a.masks[0], a.masks[1]),
                                         scale=options.scale, window=a.window, width=width)
    else:
        received = {f"{b.name}": rescaled_received_lift(m, mask) for b, m, mask in zip(a.blocks, (m1, m2), a.masks)}
        what = a.what.replace(_reduction_text(a.reduction), _received_text(a.reduction))
        fig = figures.token_bars(received, sentence.tokens, f"attention received, {first.name} against "
                                 f"{second.name} ({what}), ÷ uniform", "received ÷ uniform (×1: uniform)",
                                 base=1.0, width=width)
    return figures.describe(fig, source(sentence), width)


def attention(sentence: SentenceTrace, options: AttentionOptions = AttentionOptions(), width: float = FULL) -> Drawing:
    """The Attention page (the paper's Fig. 4): the sentence shaded by what the options say; both blocks'
    attention side by side, reduced over features (mean, max, or the one feature k, titled by its rank), as lift
    over uniform or as probabilities, and the sharpest features of each block as small multiples; in "sharpest
    features" mode in their place the ranking block's :data:`TOP_RANKED` sharpest features as small multiples,
    each titled by its rank, k and mean entropy (:func:`ranked_grid`); what one query token attends to, feature by
    feature, sharpest first; the two blocks compared. A sentence in which no token may attend another
    (one token) gets a note instead. ``width``: the pixels the page gives the drawing (:data:`~disan.render.figures.HALF_WIDTH` for each
    sentence of a pair)."""
    tr, tokens = sentence.trace, sentence.tokens
    n = len(tokens)
    if not any(np.asarray(block.mask).any() for block in tr.blocks):
        return Drawing([Row({"attention-none": Note(
            f"{markup.quoted(shorten(sentence.text))} has {n} token{'s' if n != 1 else ''}, and no token may attend "
            f"another: a DiSA block never lets a token attend to itself (the forward block attends to earlier tokens, "
            f"the backward block to later ones). So there is no token2token attention to show; each block's "
            f"output is u = F ⊙ h, since its attention output s is 0. Type a longer sentence, or see the "
            f"Fusion gates and Source2token pages.")})])
    a = _attention(sentence, options)
    first, second = tr.blocks
    shade = options.shade or next(iter(shade_choices(tr)))
    lift_note = (" Lift over uniform: P × the number of tokens the query row may attend; ×1 (white) is what "
                 "attention spread evenly over them gives, red above, blue below." if options.scale == "lift" else "")
    overlap = (a.masks[0] & a.masks[1]).any()
    each = panel_width(width, len(tr.blocks))
    if options.mode == "sharpest features":  # the ranked features themselves, in place of one reduced heatmap
        ranking = find_block(tr, options.rank_by).name
        top = [Row({"attention-ranked": ranked_grid(sentence, options, width)},
                   f"The sharpest features of the {ranking} block, ranked",
                   f"Each panel is one feature k of the {ranking} block, ranked by the entropy of its attention "
                   f"averaged over the query tokens (lower: attention on fewer tokens); ▶ marks the feature the "
                   f"sentence and the comparison below show. Grey cells are masked." + lift_note)]
    else:
        heatmaps = attention_heatmaps(sentence, options, width)  # refuses a feature the blocks do not have
        what, about = None, "Grey cells are masked." + lift_note
        if options.mode == "one feature":
            ranking = find_block(tr, options.rank_by).name
            order = feature_choices(tr, ranking, a.query)
            what = f"Feature k = {a.reduction} in both blocks"
            about = (f"{feature_label(tr, ranking, a.reduction, a.query)} in the {ranking} block: rank "
                     f"{order.index(a.reduction) + 1} of {len(order)} there. The same k is another feature in each "
                     f"block; the Feature atlas page profiles each over a corpus. " + about)
        top = [Row({"attention-pair": heatmaps}, what, about),
               Row({"attention-grid": sharpest_grid(sentence, options, width)}, "Sharpest features",
                   "Each panel is one feature k of one block: the features whose attention is most concentrated "
                   "(lowest entropy, averaged over query tokens).")]
    return Drawing([
        Row({"attention-sentence": Html(markup.shaded_sentence(tokens, shading(sentence, shade, a.reduction)))}),
        *top,
        *rows_of({f"attention-query-{file_name(b.name)}": query_panel(sentence, b.name, options, each)
                  for b in tr.blocks}, width,
                 "One query token, feature by feature",
                 f"Rows: the {QUERY_FEATURES} of the {a.probs[0].shape[-1]} features whose attention from the query "
                 f"token is sharpest (lowest entropy over the tokens it may attend), sharpest at the top."),
        Row({"attention-blocks": blocks_compared(sentence, options, width)},
            f"{first.name} − {second.name}".capitalize() if overlap
            else f"Attention received, {first.name} against {second.name}",
            ("Red where the first block attends more, blue where the second does, on the cells both may attend."
             if overlap else
             f"The blocks never attend the same cell ({first.direction}: earlier tokens, {second.direction}: later "
             f"ones), so they are compared token by token: the attention each token receives in each block, ÷ "
             f"what uniform attention over the same mask would give it (×1). A token no query may attend in a "
             f"block (the last token forward, the first backward) has no bar there.")),
    ])


@dataclass(frozen=True)
class GatesOptions:
    """The Fusion gates page has no widgets yet."""


def mean_gates(sentence: SentenceTrace, width: float = FULL) -> go.Figure:
    """The mean fusion gate per token of every block, as deviations from 0.5 (the paper's Fig. 5); stop
    words hatched."""
    gate = {block.name: np.asarray(block.gate) for block in sentence.trace.blocks}  # (n, d_h) each
    return figures.describe(figures.mean_gate_bars(gate, sentence.tokens, markup.stop_words(sentence.tokens),
                                                   width), source(sentence), width)


def gate_panel(sentence: SentenceTrace, block: str | None = None, width: float = FULL) -> go.Figure:
    """One block's (None: the first) (n, d_h) fusion gate, features ordered by their mean gate; stop words marked."""
    b = find_block(sentence.trace, block)
    fig = figures.gate_heatmap(np.asarray(b.gate), sentence.tokens, f"{b.name} fusion gate F",
                               stop=markup.stop_words(sentence.tokens), width=width)
    return figures.describe(fig, source(sentence), width)


def gates(sentence: SentenceTrace, options: GatesOptions = GatesOptions(), width: float = FULL) -> Drawing:
    """The Fusion gates page (the paper's Fig. 5): the sentence shaded by each block's mean gate, the mean
    gate per token of every block as deviations from 0.5, then each block's (n, d_h) gate with the
    features ordered by their mean gate; stop words are marked. ``width`` as in :func:`attention`."""
    names = block_names(sentence.trace)
    each = panel_width(width, len(names))
    return Drawing([
        *rows_of({f"gates-sentence-{file_name(name)}": Html(markup.shaded_sentence(
            sentence.tokens, shading(sentence, f"gate {name}"))) for name in names}, width),
        Row({"gates-mean": mean_gates(sentence, width)},
            caption=figures.STOP_CAPTION),
        *rows_of({f"gates-{file_name(name)}": gate_panel(sentence, name, each) for name in names}, width,
                 "Every feature",
                 "White is F = 0.5, an even mix of h and the attention output s; red keeps more of h, blue takes "
                 "more of s. Features are sorted by their mean gate over the tokens."),
    ])


@dataclass(frozen=True)
class Source2TokenOptions:
    """The Source2token page has no widgets yet."""


def source2token_importance(sentence: SentenceTrace, width: float = FULL) -> go.Figure:
    """Each token's source2token importance (the mean over features) against the uniform 1/n."""
    probs = np.asarray(sentence.trace.source2token.probs)  # (n, D)
    return figures.describe(figures.importance_bars(measures.token_importance(probs), sentence.tokens, width),
                            source(sentence), width)


def source2token_heatmap(sentence: SentenceTrace, width: float = FULL) -> go.Figure:
    """Every feature's source2token distribution over the tokens, the DiSA blocks' halves marked."""
    probs = np.asarray(sentence.trace.source2token.probs)  # (n, D)
    return figures.describe(figures.source2token_heatmap(probs, sentence.tokens, block_names(sentence.trace),
                                                         width), source(sentence), width)


def source2token(sentence: SentenceTrace, options: Source2TokenOptions = Source2TokenOptions(),
                 width: float = FULL) -> Drawing:
    """The Source2token page: the sentence shaded by importance, the importance of each token, then every
    feature's distribution over tokens with the features of each DiSA block marked. ``width`` as in
    :func:`attention`."""
    return Drawing([
        Row({"s2t-sentence": Html(markup.shaded_sentence(sentence.tokens, shading(sentence, "source2token")))}),
        Row({"s2t-importance": source2token_importance(sentence, width)}),
        Row({"s2t-heatmap": source2token_heatmap(sentence, width)},
            caption="Each column is one feature's distribution over the tokens. The features are the DiSA "
                    "blocks' outputs concatenated: the dashed line separates the blocks' halves."),
    ])


def prediction(result: TraceResult, width: float = 0.75 * FULL) -> go.Figure:
    """An input's class probabilities, the predicted class marked (none for a relatedness score), titled
    with the model and the input (the app draws it in three quarters of the page's width)."""
    pred = result.prediction
    fig = figures.class_probabilities(pred.probs, None if pred.score is not None else pred.label)
    first = result.sentences[0]
    text = " / ".join(shorten(s.text, 40) for s in result.sentences)
    return figures.describe(fig, f"model {first.model or '?'} · “{text}”", width)


@dataclass(frozen=True)
class View:
    """A single-sentence view in the registry."""
    draw: Callable[..., Drawing]  # (sentence, options, width) -> Drawing
    options: type                 # its options dataclass: ``options()`` are the page's defaults
    needs: str                    # the part of the trace it draws: "blocks" or "source2token"
    lacking: str                  # what an encoder without that part is said to lack
    ranked: frozenset[str] = frozenset()  # the panels that draw what an explanation ranks the tokens by: a
                                          # page's reading of that explanation goes under the first drawn

    def available(self, trace) -> bool:
        """Whether the trace has what this view draws (the baselines have no DiSA blocks)."""
        return bool(getattr(trace, self.needs))


VIEWS: dict[str, View] = {
    "attention": View(attention, AttentionOptions, "blocks", "token2token attention; see the Source2token page",
                      frozenset({"attention-pair", "attention-ranked"})),
    "gates": View(gates, GatesOptions, "blocks", "fusion gates"),
    "source2token": View(source2token, Source2TokenOptions, "source2token", "source2token attention",
                         frozenset({"s2t-importance"})),
}


# ---------------------------------------------------------------- word senses (several sentences)

@dataclass(frozen=True)
class SensesOptions:
    """The Word senses page's widgets; the defaults are the page's."""
    word: str | None = None  # a normalised word of every sentence (None: the first longer than 3 letters)
    kind: str | None = None  # a key of senses.VECTORS (None: the first the encoder has)
    occurrences: tuple[int, ...] | None = None  # per sentence, which occurrence of the word (None: the first each)


def senses_choices(sentences: Sequence[SentenceTrace]) -> tuple[list[str], list[str]]:
    """The words and vector kinds the Word senses page offers; :class:`Unavailable` says why there are none."""
    if len(sentences) < 2:
        raise Unavailable("Type at least two sentences that share a word.")
    kinds = senses.vector_kinds(sentences[0].trace)
    if not kinds:
        raise Unavailable("This encoder has no per-token attention vectors.")
    words = senses.shared_words([s.tokens for s in sentences])
    if not words:
        raise Unavailable("The sentences share no word; the word must appear in every sentence.")
    return words, kinds


def default_word(words: Sequence[str]) -> int:
    """The index of the word offered first: the first longer than 3 letters (a content word), else the first."""
    return next((i for i, w in enumerate(words) if len(w) > 3), 0)


def occurrence_label(tokens: Sequence[str], i: int, context: int = 2) -> str:
    """An occurrence of a word by its position, with a little context: "token 5: … pouring a [glass] of tea …"
    (the position keeps two occurrences in the same context apart)."""
    start, stop = max(0, i - context), min(len(tokens), i + context + 1)
    words = [f"[{t}]" if k == i else t for k, t in zip(range(start, stop), tokens[start:stop])]
    return f"token {i}: " + ("… " if start else "") + " ".join(words) + (" …" if stop < len(tokens) else "")


def sentence_labels(sentences: Sequence[SentenceTrace]) -> list[str]:
    """Each sentence numbered from 1 with its whole text: "1: The glass bottle is big"."""
    return [f"{i + 1}: {s.text}" for i, s in enumerate(sentences)]


def cosine_baselines(sentences: Sequence[SentenceTrace], at: Sequence[int], kind: str, word: str) -> pd.DataFrame:
    """Per pair of sentences, the word's cosine beside :func:`~disan.inspect.senses.cosine_baseline`'s."""
    rows = []
    for p in range(len(sentences)):
        for q in range(p + 1, len(sentences)):
            mean, below, count = senses.cosine_baseline(sentences[p].trace, at[p], sentences[q].trace, at[q], kind)
            rows.append({"sentences": f"{p + 1} and {q + 1}",
                         f"cosine of “{word}”": measures.cosine_similarity(
                             senses.word_vector(sentences[p].trace, at[p], kind),
                             senses.word_vector(sentences[q].trace, at[q], kind)),
                         "mean cosine of the other token pairs": mean,
                         f"other pairs below “{word}”": f"{below:.0%} of {count}" if count else "none"})
    return pd.DataFrame(rows)


def word_senses(sentences: Sequence[SentenceTrace], options: SensesOptions = SensesOptions()) -> Drawing:
    """The Word senses page (the paper's Fig. 6): one word's vectors in every sentence, their cosine
    similarities and the features where the first two differ most.

    It takes several sentences, so it is not in :data:`VIEWS`.
    """
    words, kinds = senses_choices(sentences)
    word = words[default_word(words)] if options.word is None else options.word
    kind = kinds[0] if options.kind is None else options.kind
    if word not in words:
        raise Unavailable(f"Not every sentence has the word {word!r}.")
    if kind not in kinds:
        raise ValueError(f"vector kind must be one of {kinds}, not {kind!r}")
    places = [senses.positions(s.tokens, word) for s in sentences]
    chosen = options.occurrences or (0,) * len(sentences)
    if len(chosen) != len(sentences) or any(not 0 <= c < len(p) for c, p in zip(chosen, places)):
        raise ValueError(f"occurrences {chosen} do not fit the word's occurrences {[len(p) for p in places]}")
    at = [p[c] for p, c in zip(places, chosen)]
    vectors = [senses.word_vector(s.trace, i, kind) for s, i in zip(sentences, at)]
    labels = sentence_labels(sentences)
    similarity = pd.DataFrame(measures.similarity_matrix(vectors), index=labels,
                              columns=[str(i + 1) for i in range(len(sentences))])
    halves = block_names(sentences[0].trace)
    differing = differing_features(vectors[0], vectors[1]).rename(
        columns={"feature": "feature k", "a": "sentence 1", "b": "sentence 2", "abs_diff": "|1 − 2|"})
    if halves:
        d = len(vectors[0]) // len(halves)
        differing.insert(1, "block", [halves[int(k) // d] for k in differing["feature k"]])
    heatmaps = figures.word_sense_heatmaps(vectors, labels, f"“{word}”: {senses.VECTORS[kind]}", halves)
    figures.describe(heatmaps, f"model {sentences[0].model or '?'} · “{word}” at " + ", ".join(
        f"token {i} of sentence {n + 1}" for n, i in enumerate(at)))
    return Drawing([
        Row({"senses-heatmaps": heatmaps}),
        Row({"senses-similarity": similarity, "senses-baseline": cosine_baselines(sentences, at, kind, word)},
            "Cosine similarity",
            "The cosine of the angle between the word's vectors in two sentences: 1 is the same direction. "
            "Beside it, what to judge it against: the cosines of every other pair of tokens of the same two "
            "sentences, one token from each; a cosine that stands out from them says the word keeps its "
            "direction across the contexts, one within them says no more than that vectors of this kind are alike."),
        Row({"senses-differing": differing}, "Features that differ most (sentences 1 and 2)",
            "feature k: the position in the vector" + (f" ({', '.join(halves)} halves: which block it comes from)"
                                                       if halves else "")
            + "; sentence 1, sentence 2: the word's value there in each sentence; |1 − 2|: their absolute "
              "difference, largest first."),
    ])
