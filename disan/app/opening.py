"""How a page that reads the sidebar's input opens: the model, its trace of the input and the prediction above
the page; a page that draws one registered view of it; the reading of the explanations it draws, beside them;
the input's standalone report."""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from disan.analyses.attribution import attributed
from disan.app import analyses as glue
from disan.app.drawing import chart, downloads, draw, draw_with_room
from disan.app.models import checkpoint_args, current_pipeline
from disan.app.traces import current_input, run_trace
from disan.inspect import catalog
from disan.inspect.pipeline import Pipeline, SentenceTrace, TraceResult
from disan.render import markup, views
from disan.render.faithfulness import reading_line
from disan.render.kinds import look_of
from disan.render.report import report_file

FAITHFULNESS_PAGE = "app_pages/faithfulness.py"


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


def view_page(name: str, key: str, explained: Sequence[str] = ()) -> None:
    """A page that draws one registered view (:data:`disan.render.views.VIEWS`) of the input with its
    defaults, both sentences of a pair side by side, each with its trace downloads under ``key``; and the
    reading of the explanations of the registry's entries ``explained`` (:class:`ReadingRoom`), which its
    view draws."""
    view = views.VIEWS[name]
    sentences = page_sentences(view)
    room = ReadingRoom(sentences, explained, view.ranked)
    for role, sentence, where in side_by_side(sentences):
        room.draw(view.draw(sentence, view.options(), drawing_width(sentences)), where,
                  f"{role}-" if len(sentences) > 1 else "")
        downloads(sentence, f"{key}-{role}", where, role)
    report_download()
    room.show()


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



def show_reading(where, names: Sequence[str]) -> None:
    """One line in ``where`` per explanation of the registry's entries ``names`` of the sidebar's input: its
    erasure test on this input against random rankings of its tokens (:func:`disan.app.analyses.reading`), with
    the explanation's verdicts over the test inputs where the Faithfulness page's result at its defaults is kept
    (:func:`disan.app.analyses.kept_erasure`), else a link to that page (where the model has a test split for
    it). A page calls it after drawing its figures, which are on screen while it computes."""
    entry, pipe = current_pipeline()
    lines = where.empty()
    lines.caption("Erasing this input's top tokens, and random ones…")
    readings = glue.reading(*checkpoint_args(entry), current_input(pipe), tuple(names))
    if not readings:  # an encoder without what the entries read (a baseline's missing blocks)
        lines.empty()
        return
    summary = glue.kept_erasure(entry)
    with lines.container():
        for reading in readings:
            st.caption(markup.markdown_label(reading_line(reading, entry.kind, summary)))
        if summary is None and glue.no_split(entry) is None:
            st.page_link(FAITHFULNESS_PAGE, label="The same test over the test inputs: Faithfulness",
                         icon=":material/verified:")


class ReadingRoom:
    """Where a page that draws a view of each sentence writes the reading of the explanations ``names`` (the
    registry's entries) that it draws (:func:`show_reading`): for one sentence under the first of its panels
    keyed in ``ranked`` (the heatmap of what the explanation ranks by); for a pair, whose one reading covers
    both sentences (the Faithfulness page's default side), in a row above their columns. Made before the
    sentences are drawn (:meth:`draw`), shown after (:meth:`show`)."""

    def __init__(self, sentences: list, names: Sequence[str], ranked: frozenset[str]):
        self.names, self.ranked = names, ranked
        self.pair = len(sentences) > 1
        self.room = st.container() if self.pair and names else None
        self.drawn = False  # whether a panel of ``ranked`` was drawn: a one-token sentence may have none

    def draw(self, drawing: views.Drawing, where, prefix: str) -> None:
        """Draw a sentence's view as :func:`draw` does, leaving the room under its ranked panel for one sentence."""
        if self.pair or not self.names:
            draw(drawing, where, prefix)
            self.drawn |= bool(self.ranked & drawing.keys())
        else:
            self.room = draw_with_room(drawing, self.ranked, where, prefix)
            self.drawn = self.room is not None

    def show(self) -> None:
        """The reading, once every figure of the page is drawn; none where no ranked panel was."""
        if self.names and self.drawn:
            show_reading(self.room, self.names)
