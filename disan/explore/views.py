"""What each page of the app draws, defined once.

A view is a function from traced sentence(s) and an options dataclass (the page's widget choices;
its defaults are the page's defaults) to a :class:`Drawing`: the page's figures (and tables) by key,
in drawing order, laid out in rows. The pages only turn widgets into options and draw the result;
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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from disan.explore import figures, senses
from disan.explore.pipeline import Prediction, SentenceTrace
from disan.explore.tables import differing_features, file_name

# What the app shows before the user types anything: the paper's case-study sentence (Fig. 4 and 5)
# and a SICK-like pair for the sentence-pair models.
PRESET_SENTENCE = "Families have some dogs in front of a carousel"
PRESET_PAIR = ("A man is pouring a glass of tea", "A man is drinking tea")

MODES = ("mean", "max", "one feature", "sharpest features")  # how the Attention page reduces features
TOP_RANKED = 20  # the sharpest features offered in "sharpest features" mode


Panel = go.Figure | pd.DataFrame


@dataclass(frozen=True)
class Row:
    """Panels (figures or tables) drawn side by side, under an optional subheader."""
    panels: dict[str, Panel]
    title: str | None = None


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
        """The plotly figures by key, in drawing order (tables left out)."""
        return {key: panel for key, panel in self._panels.items() if isinstance(panel, go.Figure)}


class Unavailable(ValueError):
    """A view cannot be drawn from these inputs; the message tells the user why."""


# ---------------------------------------------------------------- labels and choices

def token_label(tokens: Sequence[str], j: int) -> str:
    """How a token is offered in a selector: "3 · dogs" (the position keeps repeated tokens apart)."""
    return f"{j} · {tokens[j]}"


def block_names(trace) -> list[str]:
    """The names of the trace's DiSA blocks, in order (empty for the baselines)."""
    return [block.name for block in trace.blocks]


def feature_count(trace) -> int:
    """d_h: the features of each DiSA block, for the "one feature" selector."""
    return int(trace.blocks[0].probs.shape[-1])


def _block(trace, name: str | None):
    """The block called ``name``; None: the first block."""
    if name is None:
        return trace.blocks[0]
    for block in trace.blocks:
        if block.name == name:
            return block
    raise ValueError(f"no DiSA block is named {name!r}; the blocks are {block_names(trace)}")


def sharpest_features(trace, block: str | None = None) -> list[int]:
    """The :data:`TOP_RANKED` features of a block (None: the first) with the sharpest attention, sharpest first."""
    b = _block(trace, block)
    return figures.rank_features(np.asarray(b.probs), np.asarray(b.mask), top=TOP_RANKED)


# ---------------------------------------------------------------- single-sentence views

@dataclass(frozen=True)
class AttentionOptions:
    """The Attention page's widgets; the defaults are the page's."""
    mode: str = "mean"          # one of MODES
    feature: int | None = None  # "one feature": k (None: 0); "sharpest features": the chosen k (None: the sharpest)
    rank_by: str | None = None  # "sharpest features": the block whose entropy ranks features (None: the first)
    query: int | None = None    # the query token j of the per-feature views (None: the last token)


def _reduction(trace, options: AttentionOptions) -> str | int:
    """What :func:`figures.reduce_features` gets for the chosen mode: "mean", "max" or a feature."""
    if options.mode in ("mean", "max"):
        return options.mode
    if options.mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {options.mode!r}")
    if options.feature is not None:
        return options.feature
    return 0 if options.mode == "one feature" else sharpest_features(trace, options.rank_by)[0]


def attention(sentence: SentenceTrace, options: AttentionOptions = AttentionOptions()) -> Drawing:
    """The Attention page (the paper's Fig. 4): both blocks' attention side by side, reduced over features
    as the options say; what one query token attends to, feature by feature; the blocks' difference."""
    tr, tokens = sentence.trace, sentence.tokens
    n = len(tokens)
    first, second = tr.blocks
    probs = [np.asarray(block.probs) for block in tr.blocks]  # (n, n, d_h) each
    masks = [np.asarray(block.mask) for block in tr.blocks]   # (n, n) each
    reduction = _reduction(tr, options)
    m1, m2 = (figures.reduce_features(p, reduction) for p in probs)
    j = n - 1 if options.query is None else options.query
    if not 0 <= j < n:
        raise ValueError(f"query token {j} is out of range for {n} tokens")
    difference = f"{first.name} − {second.name}"
    return Drawing([
        Row({"attention-pair": figures.attention_pair(m1, m2, tokens, masks[0], masks[1],
                                                      titles=(f"{first.name} DiSA", f"{second.name} DiSA"))}),
        Row({f"attention-query-{file_name(block.name)}": figures.query_view(p, j, tokens, m)
             for block, p, m in zip(tr.blocks, probs, masks)}, "One query token, every feature"),
        Row({"attention-diff": figures.difference_heatmap(m1, m2, tokens, difference)}, difference.capitalize()),
    ])


@dataclass(frozen=True)
class GatesOptions:
    """The Fusion gates page has no widgets yet."""


def gates(sentence: SentenceTrace, options: GatesOptions = GatesOptions()) -> Drawing:
    """The Fusion gates page (the paper's Fig. 5): the mean gate per token of every block, then each
    block's (n, d_h) gate."""
    tr, tokens = sentence.trace, sentence.tokens
    gate = {block.name: np.asarray(block.gate) for block in tr.blocks}  # (n, d_h) each
    return Drawing([
        Row({"gates-mean": figures.mean_gate_bars(gate, tokens)}),
        Row({f"gates-{file_name(name)}": figures.gate_heatmap(g, tokens, f"{name} gate") for name, g in gate.items()}),
    ])


@dataclass(frozen=True)
class Source2TokenOptions:
    """The Source2token page has no widgets yet."""


def source2token(sentence: SentenceTrace, options: Source2TokenOptions = Source2TokenOptions()) -> Drawing:
    """The Source2token page: the importance of each token, then every feature's distribution over tokens."""
    tokens = sentence.tokens
    probs = np.asarray(sentence.trace.source2token.probs)  # (n, D)
    return Drawing([
        Row({"s2t-importance": figures.importance_bars(figures.token_importance(probs), tokens)}),
        Row({"s2t-heatmap": figures.source2token_heatmap(probs, tokens)}),
    ])


def prediction(pred: Prediction) -> go.Figure:
    """A prediction's class probabilities, the predicted class marked (none for a relatedness score)."""
    return figures.class_probabilities(pred.probs, None if pred.score is not None else pred.label)


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
    vectors = [senses.word_vector(s.tokens, s.trace, word, kind) for s in sentences]
    labels = [f"{i + 1}: {s.text[:50]}" for i, s in enumerate(sentences)]
    similarity = pd.DataFrame(figures.similarity_matrix(vectors), index=labels, columns=labels)
    return Drawing([
        Row({"senses-heatmaps": figures.word_sense_heatmaps(vectors, labels, f"“{word}”: {senses.VECTORS[kind]}")}),
        Row({"senses-similarity": similarity}, "Cosine similarity"),
        Row({"senses-differing": differing_features(vectors[0], vectors[1])},
            "Features that differ most (sentences 1 and 2)"),
    ])
