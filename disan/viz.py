"""The notebook API: the app's figures as plotly figures, from a trace (in Jupyter a figure shows itself).

    import disan
    from disan import viz

    pipe = disan.load("checkpoints/sst5")
    result = pipe.trace("Families have some dogs in front of a carousel")
    viz.attention(result)                 # forward and backward heatmaps side by side (the paper's Fig. 4)
    viz.attention(result, mode="max")     # or mode=17: one feature
    viz.query(result, j=3)                # what token 3 attends to, feature by feature
    viz.difference(result)                # what each token receives, forward against backward
    viz.gates(result)                     # the mean fusion gate per token (Fig. 5)
    viz.source2token(result)              # each token's source2token importance
    viz.attribution(pipe, "A gorgeous, witty film")   # integrated gradients beside attention
    viz.knockout(pipe, "A gorgeous, witty film", keys=[1])  # forbid attention into token 1
    viz.compare(pipe, disan.load("checkpoints/trec"), "What is a carousel ?")
    viz.case_study(pipe, ["first sentence", ...])  # the claims against their nulls (pandas; 20+ texts)
    viz.feature_atlas(pipe, sentences)    # what each attention feature does: .table (pandas), .figures
    viz.faithfulness(pipe, sentences)     # erasure and interventions against their nulls (20+ texts)
    viz.plausibility(pipe, 100)           # SST: do the explanations single out the words humans marked?
    viz.reading(pipe, "A gorgeous, witty film")  # each explanation's erasure test on this input, in words
    viz.report(pipe, "A gorgeous, witty film", "report.html")         # one standalone HTML file

A trace argument is what ``pipe.trace`` returns (for a pair model, ``sentence="hypothesis"`` picks the
hypothesis; the premise is the default) or one of its sentences. Each function returns exactly the figure
the app's page draws with the page's defaults (lift over uniform, the middle query token), building only
that figure. Functions that draw several panels
return a :class:`disan.render.views.Drawing`, a mapping of figures (and tables) by key:
``for fig in drawing.figures.values(): fig.show()``.
"""
from __future__ import annotations

import html
from pathlib import Path

import plotly.graph_objects as go

from disan.data.text import check_text
from disan.analyses import atlas as _atlas
from disan.render import figures, markup, notebook, views
from disan.render import atlas as _atlas_render
from disan.render import casestudy as _casestudy_render
from disan.render import compare as _compare_render
from disan.render import counterfactual as _counterfactual_render
from disan.render import attribution as _attribution_drawing
from disan.render import faithfulness as _faithfulness_drawing
from disan.render.faithfulness import reading_line
from disan.analyses import attribution as _attribution
from disan.analyses import casestudy as _casestudy
from disan.analyses import compare as _compare
from disan.analyses import counterfactual as _counterfactual
from disan.analyses import explainers as _explainers
from disan.analyses import faithfulness as _faithfulness
from disan.analyses import plausibility as _plausibility
from disan.analyses import corpus as _corpus
from disan.data import treebank as _treebank
from disan.analyses import stats as _stats
from disan.render.report import report_file, report_input
from disan.render.views import AttentionOptions
from disan.inspect.pipeline import NOTEBOOK_HTML, Prediction, Predictions, SentenceTrace, TraceResult


def _sentence(trace, sentence: str = "premise") -> SentenceTrace:
    """The sentence to draw: the trace itself, a single-sentence result's sentence, or a pair's premise/hypothesis."""
    if isinstance(trace, SentenceTrace):
        return trace
    if not isinstance(trace, TraceResult):
        raise TypeError(f"expected what pipe.trace or pipe.trace_sentence returns, not {type(trace).__name__}")
    if trace.sentence is not None:
        return trace.sentence
    if sentence not in ("premise", "hypothesis"):
        raise ValueError(f"sentence must be 'premise' or 'hypothesis', not {sentence!r}")
    return getattr(trace, sentence)


def _needs_blocks(s: SentenceTrace) -> None:
    if not s.trace.blocks:
        raise ValueError("this encoder has no DiSA blocks (no token2token attention, no gates)")


def _drawn(trace, sentence: str, mode: str | int, scale: str, query: int | None):
    """(sentence, the Attention page's options) for a notebook call; ValueError where the page would show a note."""
    s = _sentence(trace, sentence)
    _needs_blocks(s)
    if not any(block.mask.any() for block in s.trace.blocks):
        raise ValueError(f"{markup.quoted(s.text)} has no token that may attend another: there is no token2token "
                         "attention")
    if isinstance(mode, int):
        return s, AttentionOptions("one feature", mode, scale=scale, query=query)
    return s, AttentionOptions(mode, scale=scale, query=query)


def attention(trace, mode: str | int = "mean", sentence: str = "premise", scale: str = AttentionOptions.scale,
              query: int | None = None) -> go.Figure:
    """Both DiSA blocks' token2token attention side by side, as the Attention page draws it: rows the query
    token j, columns the attended token i; ``mode`` is "mean" or "max" over features, or a feature index k;
    ``scale`` is "lift" (the probability times the number of tokens the row may attend, the page's
    default) or "probability"; a sentence over 60 tokens shows the page's window around ``query``
    (default: the middle token)."""
    return notebook.Figure(views.attention_heatmaps(*_drawn(trace, sentence, mode, scale, query)))


def query(trace, j: int | None = None, block: str | None = None, sentence: str = "premise",
          scale: str = AttentionOptions.scale) -> go.Figure:
    """What query token ``j`` (default: the middle one, as on the Attention page) attends to in one block
    (default: the first), its 40 sharpest features first."""
    s, options = _drawn(trace, sentence, "mean", scale, j)
    panel = views.query_panel(s, block, options)
    if isinstance(panel, views.Note):  # e.g. the first token of the forward block has nothing to attend
        raise ValueError(panel.text)
    return notebook.Figure(panel)


def difference(trace, mode: str | int = "mean", sentence: str = "premise",
               scale: str = AttentionOptions.scale) -> go.Figure:
    """The two blocks compared, as the Attention page's last section: for DiSAN, the attention each token
    receives in the forward and the backward block, each ÷ uniform; for blocks that may attend the same
    cells (DiSAN without directions), the first block's attention minus the second's on those cells."""
    return notebook.Figure(views.blocks_compared(*_drawn(trace, sentence, mode, scale, None)))


def gates(trace, sentence: str = "premise") -> go.Figure:
    """The mean fusion gate F of each block per token (the paper's Fig. 5), as the Fusion gates page draws it."""
    s = _sentence(trace, sentence)
    _needs_blocks(s)
    return notebook.Figure(views.mean_gates(s))


def gate_heatmap(trace, block: str | None = None, sentence: str = "premise") -> go.Figure:
    """One block's (default: the first) fusion gate, tokens x features, as the Fusion gates page draws it."""
    s = _sentence(trace, sentence)
    _needs_blocks(s)
    return notebook.Figure(views.gate_panel(s, block))


def source2token(trace, per_feature: bool = False, sentence: str = "premise") -> go.Figure:
    """Each token's source2token importance (mean over features), or (``per_feature``) tokens x features,
    as the Source2token page draws them."""
    s = _sentence(trace, sentence)
    if s.trace.source2token is None:
        raise ValueError("this encoder has no source2token attention")
    return notebook.Figure(views.source2token_heatmap(s) if per_feature else views.source2token_importance(s))


def word_senses(sentence_traces, word: str | None = None, kind: str | None = None) -> views.Drawing:
    """One word's vectors in several sentences (``pipe.trace_sentence`` of each; the paper's Fig. 6):
    the strips, their cosine similarities and the features that differ most. ``kind``: a key of
    ``disan.inspect.senses.VECTORS``."""
    return views.word_senses(list(sentence_traces), views.SensesOptions(word, kind))


def attribution(pipe, text, steps: int = _attribution.STEPS) -> views.Drawing:
    """Integrated gradients and gradient x input of the predicted class beside each token's attention,
    and their Kendall's tau. ``text``: a sentence, or a (premise, hypothesis) pair."""
    result = pipe.trace(text)
    return _attribution_drawing.drawing(_attribution.attributed(pipe, result.sentences, steps), pipe.kind)


def knockout(pipe, text, keys, queries=(), blocks=None, sentence: str = "premise") -> views.Drawing:
    """The prediction with and without the attention edges query -> key removed (no ``queries``: every
    edge into the keys) in the named blocks (default: all), and the attention after the knockout."""
    result = pipe.trace(text)
    which = 1 if result.sentence is None and sentence == "hypothesis" else 0
    s = result.sentences[which]
    _needs_blocks(s)
    names = list(blocks) if blocks is not None else views.block_names(s.trace)
    cf = _counterfactual.knockout(pipe, result.sentences, which, names, list(keys), list(queries))
    return _counterfactual_render.knockout_drawing(pipe.kind, cf, names)


def compare(pipe_a, pipe_b, text, sentence: str = "premise") -> views.Drawing:
    """Two checkpoints on one input: predictions, attention on one scale, the differences, gates and
    source2token; :func:`disan.render.compare.statements` of :func:`disan.analyses.compare.comparison` say
    what each encoder lacks."""
    sides = []
    for pipe in (pipe_a, pipe_b):
        result = pipe.trace(text)
        name = pipe.path.name if pipe.path is not None else "model"
        sides.append(_compare.Side(name, pipe.model.cfg.encoder, result.prediction, _sentence(result, sentence)))
    return _compare_render.drawing(_compare.comparison(*sides))


def case_study(pipe, texts, resamples: int = _stats.RESAMPLES):
    """The paper's case-study claims measured on the texts: a pandas table paper claim | measured | null |
    holds? | n, each claim judged against its null model. Fewer than
    :data:`~disan.analyses.casestudy.MIN_SENTENCES` texts give the measures and no verdict."""
    study = _casestudy.measure(pipe, [check_text(t) for t in texts])
    return _casestudy_render.claims_table(_casestudy.findings(study, resamples))


def feature_atlas(pipe, texts, k: int | None = None) -> _atlas_render.FeatureAtlas:
    """Every attention feature of every DiSA block profiled over the texts (a list of sentences), typed
    (``k`` types, or None: k by silhouette) and mapped: ``.table`` is the pandas table (one row per block
    and feature, columns named after the measures), ``.figures`` the map, ``.atlas`` the rest
    (see :mod:`disan.analyses.atlas`: search, one feature explained)."""
    result = _atlas.profile(pipe, [check_text(t) for t in texts], "the texts", k)
    return _atlas_render.FeatureAtlas(result.table, _atlas_render.drawing(result, _atlas.overview(result)).figures,
                                      result)


class Faithfulness:
    """What :func:`faithfulness` measured: ``.erasure`` and ``.interventions`` (summaries with ``.table``,
    pandas), ``.cascade`` (or None), ``.drawing`` (their figures and tables); in Jupyter, all of them."""

    def __init__(self, erasure, interventions, cascade, drawing: views.Drawing):
        self.erasure, self.interventions, self.cascade, self.drawing = erasure, interventions, cascade, drawing

    def _repr_html_(self) -> str:
        parts = []
        for row in self.drawing.rows:
            parts.append(f"<h4>{html.escape(row.title)}</h4>" if row.title else "")
            parts += [p.to_html(index=False) if hasattr(p, "to_html") and not isinstance(p, go.Figure) else _inline(p)
                      for p in row.panels.values()]
        return "<div>" + "".join(parts) + "</div>"


def faithfulness(pipe, sentences, cascade: bool = False, settings=None) -> Faithfulness:
    """Is the attention an explanation of the predictions on these inputs (texts, or (premise, hypothesis)
    pairs)? Erasure curves of every explanation and attention interventions, each against its null, with
    the cascading model randomisation too when ``cascade`` (see
    :mod:`disan.analyses.faithfulness`); ``settings``: a ``Settings`` of that module (default: the page's,
    whose explanations leave out the expensive ones, which ``disan faithfulness`` runs)."""
    settings = settings or _faithfulness.Settings(explainers=_explainers.on_pages())
    sentences = list(sentences)
    erasure = _faithfulness.erasure_summary(_faithfulness.erasure_records(pipe, sentences, settings), settings)
    interventions = _faithfulness.intervention_summary(
        _faithfulness.intervention_records(pipe, sentences, settings), len(sentences), settings)
    rows = [*_faithfulness_drawing.erasure_drawing(erasure, pipe.kind).rows,
            *_faithfulness_drawing.intervention_drawing(interventions).rows]
    randomised = _faithfulness.cascade(pipe, sentences, settings) if cascade else None
    if randomised is not None:
        rows += _faithfulness_drawing.agreement_drawing(randomised, "Cascading model randomisation").rows
    return Faithfulness(erasure, interventions, randomised, views.Drawing(rows))


def plausibility(pipe, n: int = 100, split: str = "test", seed: int = 0, settings=None) -> views.Drawing:
    """Do the explanations of a model of the Stanford Sentiment Treebank (sst5, sst2) single out the words
    humans marked (not neutral)? Over a seeded sample of ``n`` inputs of ``split`` of its data, each
    explanation's mean average precision against them beside random scores', with intervals and verdicts
    (see :mod:`disan.analyses.plausibility`), as the Faithfulness page's Plausibility tab draws it; ``settings``
    as :func:`faithfulness` takes them. ValueError, with the reason, for a model without human word labels."""
    settings = settings or _faithfulness.Settings(explainers=_explainers.on_pages())
    items = _corpus.trained_items(pipe.config, split, n, seed)
    human = _treebank.trained_labels(pipe.config, items, split)
    if human.labels is None:
        raise ValueError(f"no plausibility: {human.reason}")
    labels = tuple(tuple(int(v) for v in row) for row in human.labels)
    result = _plausibility.Plausible(tuple(items), settings, labels).compute(pipe, len(items))
    return _faithfulness_drawing.plausibility_drawing(result)


class Readings:
    """What :func:`reading` measured: ``.readings``, one :class:`~disan.analyses.faithfulness.Reading` per
    explanation, and ``.lines``, each in words as the pages write it under their heatmaps; in Jupyter and in a
    console, the lines."""

    def __init__(self, readings: list, lines: list[str]):
        self.readings, self.lines = readings, lines

    def _repr_html_(self) -> str:
        return "<div>" + "".join(f"<p>{html.escape(line)}</p>" for line in self.lines) + "</div>"

    def __repr__(self) -> str:
        return "\n".join(self.lines)


def reading(pipe, text, explanations=None, corpus=None) -> Readings:
    """Each explanation's erasure test on one input (a text, or a (premise, hypothesis) pair), as the Attention,
    Source2token and Attribution pages write it under their heatmaps: f without the tokens it ranks highest and
    with only them, against random rankings of the input's tokens (see
    :func:`disan.analyses.faithfulness.reading`). ``explanations``: the registry's entries (default: every one a
    page runs); ``corpus``: an erasure summary of the same model (``viz.faithfulness(pipe, sentences).erasure``),
    whose verdicts end each line."""
    readings = _faithfulness.reading(pipe, _explainers.tokens_of(pipe, text), explanations or _explainers.on_pages())
    return Readings(readings, [reading_line(r, pipe.kind, corpus) for r in readings])


def report(pipe, text: str, path, hypothesis: str | None = None) -> Path:
    """Write the standalone HTML report of a sentence (as ``python -m disan report``); returns its path."""
    path = Path(path)
    result = pipe.trace(report_input(pipe, text, hypothesis))
    path.write_bytes(report_file(pipe, result, _attribution.attributed(pipe, result.sentences)))
    return path

__all__ = ["attention", "query", "difference", "gates", "gate_heatmap", "source2token", "word_senses",
           "attribution", "knockout", "compare", "case_study", "feature_atlas", "faithfulness", "plausibility",
           "reading", "report"]


# ---------------------------------------------------------------- how results show themselves in Jupyter

def prediction_html(prediction: Prediction) -> str:
    """A prediction as Jupyter shows it: the predicted class and its probability (or the relatedness
    score), then the class probabilities as the pages draw them."""
    if prediction.score is not None:
        head = f"relatedness score <b>{prediction.score:.2f}</b>"
    else:
        head = f"prediction <b>{html.escape(prediction.label)}</b> ({prediction.probs[prediction.label]:.3f})"
    chosen = prediction.label if prediction.score is None else None
    return f"<div><p>{head}</p>{notebook.figure_html(figures.class_probabilities(prediction.probs, chosen))}</div>"


def trace_html(result: TraceResult) -> str:
    """A traced input as Jupyter shows it: its prediction, then each sentence's forward and backward
    attention as :func:`attention` draws it (or why there is none)."""
    parts = [prediction_html(result.prediction)]
    for role, s in zip(("premise", "hypothesis") if result.sentence is None else ("sentence",), result.sentences):
        parts.append(f"<p>{role}: {markup.bdi(s.text)}</p>")
        try:
            parts.append(notebook.figure_html(attention(s)))
        except ValueError as e:  # no DiSA blocks, or a sentence of one token
            parts.append(f"<p><i>{html.escape(str(e))}</i></p>")
    return "<div>" + "".join(parts) + "</div>"


NOTEBOOK_HTML.update({Prediction: prediction_html, Predictions: notebook.predictions_html, TraceResult: trace_html})
