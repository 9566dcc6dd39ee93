"""How a page that reads the sidebar's input opens: the model, its trace of the input and the prediction above
the page; a page that draws one registered view of it; the input's standalone report."""
from __future__ import annotations

import streamlit as st

from disan.analyses.attribution import attributed
from disan.app.drawing import chart, downloads, draw
from disan.app.models import current_pipeline
from disan.app.traces import current_input, run_trace
from disan.inspect import catalog
from disan.inspect.pipeline import Pipeline, SentenceTrace, TraceResult
from disan.render import markup, views
from disan.render.kinds import look_of
from disan.render.report import report_file


def open_input() -> tuple[catalog.Entry, Pipeline, object, TraceResult]:
    """How a page that reads the sidebar's input opens: the checkpoint, its pipeline, the input and its
    trace, with the prediction shown above the page. The page stops, saying why, where there is nothing
    to show."""
    entry, pipe = current_pipeline()
    text = current_input(pipe)
    result = run_trace(entry, text)
    show_prediction(pipe, result)
    return entry, pipe, text, result


def show_prediction(pipe, result: TraceResult) -> None:
    """The prediction (a metric and the class probabilities) and the input's unknown words."""
    pred, look = result.prediction, look_of(pipe.kind)
    cols = st.columns([1, 3])
    cols[0].metric(look.outcome, pred.label, help=look.outcome_help)  # a score's label is its value, to 2 decimals
    chart(cols[1], views.prediction(result, 0.75 * views.FULL), "prediction-probs")
    if result.unknown:
        st.caption(markup.markdown_label("Unknown words (embedded as <unk>): "
                                         + ", ".join(markup.quoted(t) for t in result.unknown)))


def page_sentences(view: views.View) -> list[tuple[str, SentenceTrace]]:
    """The traced sentences a page draws, as (role, trace): one ("sentence", ...) or, for a pair model,
    ("premise", ...) and ("hypothesis", ...), which the pages draw side by side, after the prediction
    (:func:`open_input`). The page stops, saying why, where there is nothing to draw (no model, bad
    input, or an encoder without what the view draws, e.g. DiSA blocks for the token2token pages).
    """
    entry, _, _, result = open_input()
    if not view.available(result.sentences[0].trace):
        st.info(f"The {entry.encoder} encoder has no {view.lacking}.")
        st.stop()
    if result.sentence is not None:
        return [("sentence", result.sentence)]
    return [("premise", result.premise), ("hypothesis", result.hypothesis)]


def drawing_width(sentences: list) -> float:
    """The pixels a view of each sentence is drawn in: the whole page for one, half of it for a pair."""
    return views.FULL if len(sentences) == 1 else views.HALF


def side_by_side(sentences: list[tuple[str, SentenceTrace]]) -> list[tuple[str, SentenceTrace, object]]:
    """(role, trace, where to draw it) for each sentence: the page itself for one, a column each for a pair."""
    if len(sentences) == 1:
        return [(role, s, st) for role, s in sentences]
    columns = st.columns(len(sentences), gap="large")
    for (role, _), column in zip(sentences, columns):
        column.subheader(role.capitalize())
    return [(role, s, column) for (role, s), column in zip(sentences, columns)]


def view_page(name: str, key: str) -> None:
    """A page that draws one registered view (:data:`disan.render.views.VIEWS`) of the input with its
    defaults, both sentences of a pair side by side, each with its trace downloads under ``key``."""
    view = views.VIEWS[name]
    sentences = page_sentences(view)
    for role, sentence, where in side_by_side(sentences):
        draw(view.draw(sentence, view.options(), drawing_width(sentences)), where,
             prefix=f"{role}-" if len(sentences) > 1 else "")
        downloads(sentence, f"{key}-{role}", where, role)
    report_download()


def report_download(where=st) -> None:
    """A button that downloads the sidebar's input as the standalone HTML report, the file ``python -m disan
    report`` writes for it (:func:`disan.render.report.report_file`: the prediction, the attention, the gates,
    source2token and the attribution, plotly.js inside). Made only when clicked, since its attribution runs
    the model through every integrated-gradients step."""
    entry, pipe = current_pipeline()
    text = current_input(pipe)
    result = run_trace(entry, text)  # the page's trace, from the server's trace cache

    def made() -> bytes:
        return report_file(pipe, result, attributed(pipe, result.sentences))
    where.download_button("Report of this input (HTML)", made, f"disan-report-{entry.name}.html", "text/html",
                          key="report", on_click="ignore",
                          help="One HTML file that opens offline: the prediction, the attention of both blocks, "
                               "the fusion gates, source2token and the attribution, as `python -m disan report` "
                               "writes it.")
