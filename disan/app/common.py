"""Streamlit glue shared by the pages: cached models and traces, the current input, error display,
drawing a view.

Everything computed here comes from the library (``disan``); this module only caches and draws.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from disan.explore import catalog, views
from disan.explore.pipeline import SentenceTrace, TraceResult, load
from disan.explore.tables import trace_csv, trace_npz
from disan.nn.checkpoint import CONFIG, resolve


def stamp(path) -> float:
    """Cache key part that changes when a checkpoint is rewritten (a training run saved a better model)."""
    return (resolve(path) / CONFIG).stat().st_mtime


# The stamp arguments are part of the cache keys (Streamlit leaves out only arguments named with a
# leading underscore), so a rewritten checkpoint is loaded afresh.
@st.cache_resource(max_entries=8, show_spinner="Loading the model…")
def load_pipeline(path: str, mtime: float):
    # Shared by every session: pipelines run in eval mode under no_grad and never change the model.
    return load(path)


@st.cache_data(max_entries=512, show_spinner=False)
def cached_trace(path: str, mtime: float, text) -> TraceResult:
    return load_pipeline(path, mtime).trace(text)


@st.cache_data(max_entries=512, show_spinner=False)
def cached_sentence(path: str, mtime: float, text: str) -> SentenceTrace:
    return load_pipeline(path, mtime).trace_sentence(text)


def entries() -> list[catalog.Entry]:
    return catalog.list_checkpoints()


def current_entry() -> catalog.Entry | None:
    name = st.session_state.get("checkpoint")
    return next((e for e in entries() if e.ok and e.name == name), None)


def current_pipeline():
    """The selected pipeline, or None after telling the user why there is none."""
    entry = current_entry()
    if entry is None:
        st.info("No model is selected. Pick a checkpoint in the sidebar, or train one on the Training page "
                "or with `python -m disan train`.")
        return None, None
    try:
        return entry, load_pipeline(str(entry.path), stamp(entry.path))
    except ValueError as e:
        st.error(f"This checkpoint cannot be loaded: {e}")
        return entry, None


def current_input(pipe):
    """The sentence, or (premise, hypothesis), from the sidebar."""
    if pipe.is_pair:
        return (st.session_state.get("premise", views.PRESET_PAIR[0]),
                st.session_state.get("hypothesis", views.PRESET_PAIR[1]))
    return st.session_state.get("text", views.PRESET_SENTENCE)


def run_trace(entry, text) -> TraceResult | None:
    try:
        return cached_trace(str(entry.path), stamp(entry.path), text)
    except ValueError as e:
        st.warning(str(e))
        return None


def show_prediction(pipe, result: TraceResult) -> None:
    """The prediction (a metric and the class probabilities) and the input's unknown words."""
    pred = result.prediction
    cols = st.columns([1, 3])
    if pred.score is not None:
        cols[0].metric("relatedness", f"{pred.score:.2f}", help="expected score on the 1–5 scale")
    else:
        cols[0].metric("prediction", pred.label)
    chart(cols[1], views.prediction(pred), "prediction-probs")
    if result.unknown:
        st.caption("Unknown words (embedded as <unk>): " + ", ".join(repr(t) for t in result.unknown))


def pick_sentence(result: TraceResult, key: str) -> SentenceTrace:
    """For a pair, let the user choose the premise or the hypothesis."""
    if result.sentence is not None:
        return result.sentence
    which = st.radio("Sentence", ["premise", "hypothesis"], horizontal=True, key=key)
    return getattr(result, which)


def chart(where, fig, key: str) -> None:
    """Draw a figure; plotly's camera button downloads it as PNG or SVG, as chosen in the sidebar."""
    fmt = st.session_state.get("figure_format", "png")
    where.plotly_chart(fig, key=key, config={"displaylogo": False,
                                             "toImageButtonOptions": {"format": fmt, "filename": key, "scale": 2}})


def draw(drawing: views.Drawing) -> None:
    """Draw a view's rows: the row's subheader, then its figures and tables side by side."""
    for row in drawing.rows:
        if row.title:
            st.subheader(row.title)
        places = st.columns(len(row.panels)) if len(row.panels) > 1 else [st]
        for where, (key, panel) in zip(places, row.panels.items()):
            if isinstance(panel, pd.DataFrame):
                # a table keyed by position needs no index column; one labelled by sentence keeps it
                where.dataframe(panel.style.format(precision=3), hide_index=isinstance(panel.index, pd.RangeIndex))
            else:
                chart(where, panel, key)


def downloads(sentence: SentenceTrace, key: str) -> None:
    """Buttons that download the sentence's whole trace as a zip of CSVs or as an npz."""
    c1, c2 = st.columns(2)
    c1.download_button("Trace as CSV (zip)", trace_csv(sentence.tokens, sentence.trace), "disan-trace.zip",
                       "application/zip", key=f"{key}-csv")
    c2.download_button("Trace as NPZ", trace_npz(sentence.tokens, sentence.trace), "disan-trace.npz",
                       "application/octet-stream", key=f"{key}-npz")


def page_sentence(key: str, view: views.View) -> SentenceTrace | None:
    """The trace of the sentence a page draws, with the prediction shown above it.

    None when there is nothing to draw (no model, bad input, or an encoder without what the view
    draws, e.g. DiSA blocks for the token2token pages); the user has been told why.
    """
    entry, pipe = current_pipeline()
    if pipe is None:
        return None
    result = run_trace(entry, current_input(pipe))
    if result is None:
        return None
    show_prediction(pipe, result)
    sentence = pick_sentence(result, key)
    if not view.available(sentence.trace):
        st.info(f"The {entry.encoder} encoder has no {view.lacking}.")
        return None
    return sentence

