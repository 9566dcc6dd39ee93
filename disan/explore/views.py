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

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from disan.explore import figures, markup, senses
from disan.explore.pipeline import SentenceTrace, TraceResult
from disan.explore.tables import differing_features, file_name

# What the app shows before the user types anything: the paper's case-study sentence (Fig. 4 and 5)
# and a SICK-like pair for the sentence-pair models.
PRESET_SENTENCE = "Families have some dogs in front of a carousel"
PRESET_PAIR = ("A man is pouring a glass of tea", "A man is drinking tea")

MODES = ("mean", "max", "one feature", "sharpest features")  # how the Attention page reduces features
SCALES = figures.SCALES   # how attention is coloured: lift over uniform (the default) or probability
TOP_RANKED = 20           # the sharpest features offered in "sharpest features" mode
GRID = 6                  # the sharpest features per block in the small multiples
QUERY_FEATURES = 40       # the features (sharpest for the query first) in the per-query view
WINDOW = 60               # a longer sentence's heatmaps show this many tokens at a time, around the query


@dataclass(frozen=True)
class Note:
    """A panel of plain text: why there is nothing to draw. The app shows it literally (no Markdown)."""
    text: str


@dataclass(frozen=True)
class Html:
    """A panel of HTML built from escaped text only (:mod:`disan.explore.markup`)."""
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


def feature_count(trace) -> int:
    """d_h: the features of each DiSA block, for the "one feature" selector."""
    return int(trace.blocks[0].probs.shape[-1])


def find_block(trace, name: str | None):
    """The block called ``name``; None: the first block."""
    if name is None:
        return trace.blocks[0]
    for block in trace.blocks:
        if block.name == name:
            return block
    raise ValueError(f"no DiSA block is named {name!r}; the blocks are {block_names(trace)}")


_ENTROPY: dict[int, np.ndarray] = {}


def entropy(block) -> np.ndarray:
    """(n, d) :func:`figures.query_entropy` of a block, computed once per trace: a cached trace is drawn on
    every rerun, and at 200 tokens this is the costliest step. Kept while the block's probabilities live
    (about 1 % of their size)."""
    key = id(block.probs)
    if key not in _ENTROPY:
        _ENTROPY[key] = figures.query_entropy(np.asarray(block.probs), np.asarray(block.mask))
        weakref.finalize(block.probs, _ENTROPY.pop, key, None)  # before the id can be reused
    return _ENTROPY[key]


def sharpest_features(trace, block: str | None = None, top: int | None = TOP_RANKED) -> list[int]:
    """The ``top`` features of a block (None: the first) with the sharpest attention (lowest mean entropy
    over the query rows), sharpest first."""
    b = find_block(trace, block)
    return figures.rank_features(np.asarray(b.probs), np.asarray(b.mask), top=top, entropy=entropy(b))


def feature_label(trace, block: str | None, k: int) -> str:
    """How a feature is offered in the sharpest-features picker: its index and mean entropy."""
    b = find_block(trace, block)
    sharpness = figures.feature_sharpness(np.asarray(b.probs), np.asarray(b.mask), entropy(b))[k]
    return f"k = {k} · mean entropy {sharpness:.2f} nats"


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

    "received <block>": the mean lift (:func:`figures.lift` of the features reduced by ``reduction``) that
    the token receives from the queries that may attend it: 1 is as much as uniform attention gives;
    a token no query may attend has no value. "source2token": n x its importance (1 is 1/n).
    "gate <block>": its mean fusion gate, centred at 0.5.
    """
    tr = sentence.trace
    kind, _, name = key.partition(" ")
    if key == "source2token" and tr.source2token is not None:
        importance = figures.token_importance(np.asarray(tr.source2token.probs))
        return markup.Shading("source2token importance, relative to uniform (1/n)",
                              importance * len(importance), 1.0, ratio=True)
    if kind == "received" and name in block_names(tr):
        block = find_block(tr, name)
        mask = np.asarray(block.mask, dtype=bool)
        lifted = figures.lift(figures.reduce_features(np.asarray(block.probs), reduction), mask)
        senders = mask.sum(axis=0)  # (n,): the queries that may attend each token
        with np.errstate(invalid="ignore"):
            received = np.where(mask, lifted, 0.0).sum(axis=0) / senders
        return markup.Shading(f"attention received in the {name} block ({_reduction_text(reduction)}, mean lift "
                              f"over the queries that may attend it)", received, 1.0, ratio=True)
    if kind == "gate" and name in block_names(tr):
        gate = np.asarray(find_block(tr, name).gate, dtype=float).mean(axis=1)
        return markup.Shading(f"mean fusion gate F in the {name} block (1 keeps h, 0 takes s)", gate, 0.5,
                              ratio=False)
    raise ValueError(f"cannot shade by {key!r}; choose one of {list(shade_choices(tr))}")


def _reduction_text(reduction: str | int) -> str:
    """How a title names a reduction over features."""
    return f"{reduction} over features" if isinstance(reduction, str) else f"feature k = {reduction}"


# ---------------------------------------------------------------- single-sentence views

@dataclass(frozen=True)
class AttentionOptions:
    """The Attention page's widgets; the defaults are the page's."""
    mode: str = "mean"          # one of MODES
    feature: int | None = None  # "one feature": k (None: 0); "sharpest features": the chosen k (None: the sharpest)
    rank_by: str | None = None  # "sharpest features": the block whose entropy ranks features (None: the first)
    query: int | None = None    # the query token j of the per-feature views (None: the middle token)
    scale: str = "lift"         # one of SCALES
    window: tuple[int, int] | None = None  # the [start, stop) of the tokens the heatmaps show (None: default_window)
    shade: str | None = None    # a key of shade_choices (None: the first)


def _reduction(trace, options: AttentionOptions) -> str | int:
    """What :func:`figures.reduce_features` gets for the chosen mode: "mean", "max" or a feature."""
    if options.mode in ("mean", "max"):
        return options.mode
    if options.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {options.mode!r}")
    if options.feature is not None:
        return options.feature
    return 0 if options.mode == "one feature" else sharpest_features(trace, options.rank_by)[0]


_NO_KEY = {"forward": "it has no earlier token", "backward": "it has no later token",
           "diag": "there is no other token"}


def attention(sentence: SentenceTrace, options: AttentionOptions = AttentionOptions()) -> Drawing:
    """The Attention page (the paper's Fig. 4): the sentence shaded by what the options say; both blocks'
    attention side by side, reduced over features, as lift over uniform or as probabilities; the
    sharpest features of each block as small multiples; what one query token attends to, feature by
    feature, sharpest first; the blocks' difference. A sentence in which no token may attend another
    (one token) gets a note instead."""
    tr, tokens = sentence.trace, sentence.tokens
    n = len(tokens)
    if options.scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, not {options.scale!r}")
    reduction = _reduction(tr, options)
    j = default_query(n) if options.query is None else options.query
    if not 0 <= j < n:
        raise ValueError(f"query token {j} is out of range for {n} tokens")
    masks = [np.asarray(block.mask, dtype=bool) for block in tr.blocks]  # (n, n) each
    if not any(m.any() for m in masks):
        return Drawing([Row({"attention-none": Note(
            f"“{shorten(sentence.text)}” has {n} token{'s' if n != 1 else ''}, and no token may attend another: "
            f"a DiSA block never lets a token attend to itself (the forward block attends to earlier tokens, "
            f"the backward block to later ones). So there is no token2token attention to show; each block's "
            f"output is u = F ⊙ h, since its attention output s is 0. Type a longer sentence, or see the "
            f"Fusion gates and Source2token pages.")})])
    window = default_window(n, j) if options.window is None else options.window
    shade = options.shade or next(iter(shade_choices(tr)))
    probs = [np.asarray(block.probs) for block in tr.blocks]  # (n, n, d_h) each
    first, second = tr.blocks
    m1, m2 = (figures.reduce_features(p, reduction) for p in probs)
    what = _reduction_text(reduction) + (f" (the sharpest in {options.rank_by or first.name})"
                                         if options.mode == "sharpest features" else "")
    scale = "lift over uniform" if options.scale == "lift" else "probability"
    shown = "" if window is None else f", tokens {window[0]}–{window[1] - 1} of {n}"
    about = source(sentence)
    pair = figures.attention_pair(m1, m2, tokens, masks[0], masks[1], titles=(f"{first.name} DiSA", f"{second.name} DiSA"),
                                  scale=options.scale, window=window, title=f"{what}, {scale}{shown}")
    grid = figures.feature_grid(
        [(f"{block.name} · k = {k}", p[..., k], m)
         for block, p, m in zip(tr.blocks, probs, masks) for k in sharpest_features(tr, block.name, GRID)],
        tokens, GRID, scale=options.scale, window=window,
        title=f"the {GRID} sharpest features of each block (lowest mean entropy), {scale}{shown}")
    queries = {}
    for block, p, m in zip(tr.blocks, probs, masks):
        key = f"attention-query-{file_name(block.name)}"
        if not m[j].any():
            queries[key] = Note(f"In the {block.name} block, query {j} “{tokens[j]}” attends to no token: "
                                f"{_NO_KEY.get(block.direction, 'it may attend no token')}.")
            continue
        features = query_features(block, j)
        queries[key] = figures.query_view(
            p, j, tokens, m, features, scale=options.scale, window=window,
            title=f"{block.name} · query {j}: {tokens[j]} · {len(features)} sharpest features, {scale}")
    difference = f"{first.name} − {second.name}"
    if (masks[0] & masks[1]).any():
        diff = figures.difference_heatmap(m1, m2, tokens, f"{difference}: {what}, {scale}{shown}",
                                          masks=(masks[0], masks[1]), scale=options.scale, window=window)
    else:
        diff = Note(f"The {first.name} and {second.name} blocks never attend the same cell ({first.direction}: "
                    f"earlier tokens, {second.direction}: later ones), so there is no difference to show; the "
                    f"heatmaps above show each block's own attention.")
    for fig in (pair, grid, diff, *queries.values()):
        if isinstance(fig, go.Figure):
            figures.describe(fig, about)
    lift_note = (" Lift over uniform: P × the number of tokens the query row may attend; ×1 (white) is what "
                 "attention spread evenly over them gives, red above, blue below." if options.scale == "lift" else "")
    return Drawing([
        Row({"attention-sentence": Html(markup.shaded_sentence(tokens, shading(sentence, shade, reduction)))}),
        Row({"attention-pair": pair}, caption=("Grey cells are masked." + lift_note)),
        Row({"attention-grid": grid}, "Sharpest features",
            "Each panel is one feature k of one block: the features whose attention is most concentrated "
            "(lowest entropy, averaged over query tokens)."),
        Row(queries, "One query token, feature by feature",
            f"Rows: the {QUERY_FEATURES} of the {probs[0].shape[-1]} features whose attention from the query token is "
            f"sharpest (lowest entropy over the tokens it may attend), sharpest at the top."),
        Row({"attention-diff": diff}, difference.capitalize()),
    ])


@dataclass(frozen=True)
class GatesOptions:
    """The Fusion gates page has no widgets yet."""


def gates(sentence: SentenceTrace, options: GatesOptions = GatesOptions()) -> Drawing:
    """The Fusion gates page (the paper's Fig. 5): the sentence shaded by each block's mean gate, the mean
    gate per token of every block as deviations from 0.5, then each block's (n, d_h) gate with the
    features ordered by their mean gate; stop words are marked."""
    tr, tokens = sentence.trace, sentence.tokens
    gate = {block.name: np.asarray(block.gate) for block in tr.blocks}  # (n, d_h) each
    stop = markup.stop_words(tokens)
    about = source(sentence)
    bars = figures.describe(figures.mean_gate_bars(gate, tokens, stop), about)
    heatmaps = {f"gates-{file_name(name)}": figures.describe(figures.gate_heatmap(g, tokens, f"{name} fusion gate F",
                                                                                  stop=stop), about)
                for name, g in gate.items()}
    return Drawing([
        Row({f"gates-sentence-{file_name(name)}": Html(markup.shaded_sentence(tokens, shading(sentence, f"gate {name}")))
             for name in gate}),
        Row({"gates-mean": bars}, caption="Grey italic labels and hatched bars: stop words (spaCy's English list)."),
        Row(heatmaps, "Every feature",
            "White is F = 0.5, an even mix of h and the attention output s; red keeps more of h, blue takes more "
            "of s. Features are sorted by their mean gate over the tokens."),
    ])


@dataclass(frozen=True)
class Source2TokenOptions:
    """The Source2token page has no widgets yet."""


def source2token(sentence: SentenceTrace, options: Source2TokenOptions = Source2TokenOptions()) -> Drawing:
    """The Source2token page: the sentence shaded by importance, the importance of each token, then every
    feature's distribution over tokens with the features of each DiSA block marked."""
    tokens = sentence.tokens
    probs = np.asarray(sentence.trace.source2token.probs)  # (n, D)
    about = source(sentence)
    return Drawing([
        Row({"s2t-sentence": Html(markup.shaded_sentence(tokens, shading(sentence, "source2token")))}),
        Row({"s2t-importance": figures.describe(figures.importance_bars(figures.token_importance(probs), tokens),
                                                about)}),
        Row({"s2t-heatmap": figures.describe(figures.source2token_heatmap(probs, tokens, block_names(sentence.trace)),
                                             about)},
            caption="Each column is one feature's distribution over the tokens. The features are the DiSA "
                    "blocks' outputs concatenated: the dashed line separates the blocks' halves."),
    ])


def prediction(result: TraceResult) -> go.Figure:
    """An input's class probabilities, the predicted class marked (none for a relatedness score), titled
    with the model and the input."""
    pred = result.prediction
    fig = figures.class_probabilities(pred.probs, None if pred.score is not None else pred.label)
    first = result.sentences[0]
    text = " / ".join(shorten(s.text, 40) for s in result.sentences)
    return figures.describe(fig, f"model {first.model or '?'} · “{text}”")


@dataclass(frozen=True)
class View:
    """A single-sentence view in the registry."""
    draw: Callable[..., Drawing]  # (sentence, options) -> Drawing
    options: type                 # its options dataclass: ``options()`` are the page's defaults
    needs: str                    # the part of the trace it draws: "blocks" or "source2token"
    lacking: str                  # what an encoder without that part is said to lack

    def available(self, trace) -> bool:
        """Whether the trace has what this view draws (the baselines have no DiSA blocks)."""
        return bool(getattr(trace, self.needs))


VIEWS: dict[str, View] = {
    "attention": View(attention, AttentionOptions, "blocks", "token2token attention; see the Source2token page"),
    "gates": View(gates, GatesOptions, "blocks", "fusion gates"),
    "source2token": View(source2token, Source2TokenOptions, "source2token", "source2token attention"),
}


# ---------------------------------------------------------------- word senses (several sentences)

@dataclass(frozen=True)
class SensesOptions:
    """The Word senses page's widgets; the defaults are the page's."""
    word: str | None = None  # a normalised word of every sentence (None: the first longer than 3 letters)
    kind: str | None = None  # a key of senses.VECTORS (None: the first the encoder has)
    occurrences: tuple[int, ...] | None = None  # per sentence, which occurrence of the word (None: the first each)


def vector_kinds(trace) -> list[str]:
    """The keys of :data:`senses.VECTORS` the encoder has, in that order."""
    has = {"source2token": trace.source2token is not None, "output": bool(trace.blocks), "s": bool(trace.blocks)}
    return [kind for kind in senses.VECTORS if has[kind]]


def senses_choices(sentences: Sequence[SentenceTrace]) -> tuple[list[str], list[str]]:
    """The words and vector kinds the Word senses page offers; :class:`Unavailable` says why there are none."""
    if len(sentences) < 2:
        raise Unavailable("Type at least two sentences that share a word.")
    kinds = vector_kinds(sentences[0].trace)
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
    similarity = pd.DataFrame(figures.similarity_matrix(vectors), index=labels,
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
        Row({"senses-similarity": similarity}, "Cosine similarity",
            "The cosine of the angle between the word's vectors in two sentences: 1 is the same direction."),
        Row({"senses-differing": differing}, "Features that differ most (sentences 1 and 2)",
            "feature k: the position in the vector" + (f" ({', '.join(halves)} halves: which block it comes from)"
                                                       if halves else "")
            + "; sentence 1, sentence 2: the word's value there in each sentence; |1 − 2|: their absolute "
              "difference, largest first."),
    ])
