"""Streamlit glue shared by app.py and the pages: the app's torch threads, cached models and traces, the
sidebar's checkpoints and input, opening an input in the Attention page, error display, drawing a view.

Everything computed here comes from the library (``disan``); this module only caches and draws, and
answers the questions about checkpoints and benchmarks that app.py and the pages ask, so that they
import nothing below :mod:`disan.explore` and :mod:`disan.inspect`.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import streamlit as st
import torch

from disan.store.memory import ByteCache, budget, cache_bytes
from disan.app.links import input_state
from disan.data import uploads
from disan.data.kinds import kind_of
from disan.data.registry import BENCHMARKS
from disan.data.text import MAX_TOKENS, check_text, tokenizer_version
from disan.inspect import catalog
from disan.store import diskcache, keys
from disan.render import markup, views
from disan.render.kinds import look_of
from disan.render.tables import trace_csv, trace_npz
from disan.inspect.pipeline import Pipeline, SentenceTrace, TraceResult, load
from disan.nn.checkpoint import CONFIG

# Tracing one sentence is a chain of small ops: one intra-op thread avoids spinning threads and is
# 5-10x faster than two here, and concurrent sessions each get a core. A run that the Training page
# starts trains with it too, unless its config sets threads: multiprocessing's spawn runs app.py's
# module level (which calls use_app_threads) in the training process as well.
THREADS = 1
SENTENCE_HELP = f"Up to {MAX_TOKENS} tokens; attention memory grows with the square of the length."


def use_app_threads() -> None:
    """Run torch with the app's :data:`THREADS` intra-op threads."""
    torch.set_num_threads(THREADS)


def stamp(directory) -> float:
    """Cache key part that changes when a checkpoint is rewritten (a training run saved a better model)."""
    return (Path(directory) / CONFIG).stat().st_mtime


def checkpoint_args(entry: catalog.Entry) -> tuple[str, float]:
    """The (directory, stamp) pair that keys a listed checkpoint's pipeline, traces and analyses; the
    directory is the one the listing resolved, so a load resolves nothing again."""
    return str(entry.directory), stamp(entry.directory)


# The stamp arguments are part of the cache keys (Streamlit leaves out only arguments named with a
# leading underscore), so a rewritten checkpoint is loaded afresh.
@st.cache_resource(max_entries=8, show_spinner="Loading the model…")
def load_pipeline(path: str, mtime: float) -> Pipeline:
    """The checkpoint's pipeline, loaded once per server and checkpoint version."""
    # Shared by every session: pipelines run in eval mode under no_grad and never change the model.
    return load(path)


@st.cache_resource
def trace_cache() -> ByteCache:
    """The server's traces, bounded in bytes (``DISAN_TRACE_CACHE_MB``, less the working memory of drawing
    them). Held as a resource, so a rerun reads a trace in place instead of unpickling a copy of it as
    ``st.cache_data`` would."""
    return ByteCache(cache_bytes(budget()))


def cached_sentence(path: str, mtime: float, text: str) -> SentenceTrace:
    """The encoder's trace of one sentence by a checkpoint, from the trace cache: the one trace of that
    (model, sentence) on this server, whichever page asks (pair models share one encoder, so a premise
    typed as a Word senses line is the same trace)."""
    return trace_cache().get((path, mtime, text),
                             lambda: load_pipeline(path, mtime).trace_tokens(sentence_tokens(text), text))


def sentence_tokens(text: str) -> list[str]:
    """The tokens of a sentence (:func:`disan.data.text.check_text`, whose ValueError says why a text cannot
    be traced), kept on disk: tokenising imports spaCy, half a second of a restarted server's first page, so
    a sentence traced before (the page's example, the last one typed) is traced again without it."""
    return diskcache.cached(keys.key_of("tokens", text=text, tokenizer=tokenizer_version()),
                            lambda: check_text(text))


def cached_trace(path: str, mtime: float, text) -> TraceResult:
    """The trace of an input (a text, or a (premise, hypothesis) pair) by a checkpoint: its sentences
    from :func:`cached_sentence`, the prediction from their encodings."""
    pipe = load_pipeline(path, mtime)
    return pipe.result([cached_sentence(path, mtime, t) for t in pipe.texts(text)])


@st.cache_data(max_entries=4, show_spinner=False)
def _listing(fingerprint: tuple) -> list[catalog.Entry]:
    # the fingerprint is the cache key: it names the folders that list_checkpoints reads
    return catalog.list_checkpoints()


def entries() -> list[catalog.Entry]:
    """Every checkpoint, checked (:func:`catalog.list_checkpoints`); checked again only when a file changes."""
    return _listing(catalog.fingerprint())


def persistent(widget, label: str, key: str, after=None, **kwargs):
    """A widget whose value lives in ``st.session_state[key]`` across pages and reruns that do not draw it.

    Streamlit forgets the state of a widget that a run does not draw, so the widget works on a
    shadow key and copies its value to the plain key that the pages read; ``after`` runs once the
    value is copied. Setting the shadow key on every run also sends the value to the browser, so the
    widget never shows a choice other than the one the page uses. ``st.session_state[key]`` must be
    set before the call.
    """
    shadow = f"_{key}"
    st.session_state[shadow] = st.session_state[key]

    def keep():
        st.session_state[key] = st.session_state[shadow]
        if after is not None:
            after()
    return widget(label, key=shadow, on_change=keep, **kwargs)


def kept(key: str, depends, default):
    """``st.session_state[key]``: set to ``default`` on first use and whenever ``depends`` changes (what the
    value belongs to: the sentence's tokens, the query token), kept otherwise, across pages and reruns.

    ``default``: the value, or a function that computes it (called only when it is needed). Views whose
    choices depend on the sentence (the query token, the token window) start again from their defaults
    on a new sentence, and keep the user's choice as long as the sentence stays.
    """
    marker = f"{key}@depends"
    depends = _frozen(depends)
    if key not in st.session_state or st.session_state.get(marker) != depends:
        st.session_state[key] = default() if callable(default) else default
        st.session_state[marker] = depends
    return st.session_state[key]


def _frozen(value):
    """Lists (a sentence's tokens) as tuples, so a kept marker compares equal to the same value again."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def setting(widget, label: str, key: str, options, default=None, **kwargs):
    """A :func:`persistent` choice among ``options`` (a page's view setting: a mode, a colour scale): the
    user's choice on every page visit, back to ``default`` (None: the first option) only when it is no
    longer an option (another model's block names)."""
    options = list(options)
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0] if default is None else default
    return persistent(widget, label, key, options=options, **kwargs)


def token_window(where, tokens: Sequence[str], centre: int, key: str) -> tuple[int, int] | None:
    """The tokens a page's token x token figures show: None where the sentence fits
    :data:`~disan.render.views.WINDOW`, else the [start, stop) of a slider over the sentence that starts at
    :func:`~disan.render.views.default_window` around ``centre`` (the query token, a token knocked out) and
    starts there again when the sentence or the centre changes. One control for every page that windows."""
    n = len(tokens)
    if n <= views.WINDOW:
        return None
    start, stop = views.default_window(n, centre)
    kept(key, (tokens, centre), (start, stop - 1))  # a new centre moves the window around it
    first, last = persistent(where.slider, "Tokens shown in the heatmaps", key, min_value=0, max_value=n - 1,
                             help=f"Sentences over {views.WINDOW} tokens are shown a window at a time.")
    return first, last + 1  # the slider's ends are tokens; a window's stop is past its last token


def reads_pairs(entry: catalog.Entry) -> bool:
    """Whether a listed checkpoint takes (premise, hypothesis) pairs rather than one sentence."""
    return kind_of(entry.kind).pairs


def default_checkpoint(good: list[catalog.Entry]) -> str:
    """The checkpoint a session starts on, among the working ones: :func:`disan.inspect.catalog.default_entry`,
    else the first."""
    return (catalog.default_entry(good) or good[0]).name


def benchmark_label(task: str) -> str:
    """A benchmark as the pickers show it: its name and what it is."""
    return f"{task} — {BENCHMARKS[task].description}"


def current_entry() -> catalog.Entry | None:
    """The working checkpoint the sidebar has selected, or None."""
    name = st.session_state.get("checkpoint")
    return next((e for e in entries() if e.ok and e.name == name), None)


def current_checkpoint() -> catalog.Entry:
    """The sidebar's checkpoint; the page stops after telling the user why when there is none. A page that
    draws a kept result asks this first and loads the model (:func:`entry_pipeline`) only where it needs it."""
    entry = current_entry()
    if entry is None:
        st.info("No model is selected. Pick a checkpoint in the sidebar, or train one on the Training page "
                "or with `python -m disan train`.")
        st.stop()
    return entry


def entry_pipeline(entry: catalog.Entry) -> Pipeline:
    """A listed checkpoint's pipeline; the page stops after telling the user why it cannot be loaded."""
    try:
        return load_pipeline(*checkpoint_args(entry))
    except ValueError as e:
        st.error(f"This checkpoint cannot be loaded: {e}")
        st.stop()


def current_pipeline() -> tuple[catalog.Entry, Pipeline]:
    """The sidebar's checkpoint and its pipeline (:func:`current_checkpoint`, :func:`entry_pipeline`)."""
    entry = current_checkpoint()
    return entry, entry_pipeline(entry)


def current_input(pipe):
    """The sentence, or (premise, hypothesis), from the sidebar."""
    if pipe.is_pair:
        return (st.session_state.get("premise", views.PRESET_PAIR[0]),
                st.session_state.get("hypothesis", views.PRESET_PAIR[1]))
    return st.session_state.get("text", views.PRESET_SENTENCE)


def open_in_attention(checkpoint: str, kind: str, text: str, pair: tuple[str, str] | None = None) -> None:
    """Make a checkpoint and ``text`` (or its pair; see :func:`disan.app.links.input_state`) the sidebar's
    model and input, and switch to the Attention page."""
    st.session_state["checkpoint"] = checkpoint
    st.session_state.update(input_state(kind, text, pair))
    st.switch_page("app_pages/attention.py")


def run_trace(entry, text) -> TraceResult:
    """The (cached) trace of an input by a listed checkpoint; the page stops after showing why an input
    was refused."""
    try:
        return cached_trace(*checkpoint_args(entry), text)
    except ValueError as e:
        st.warning(str(e))
        st.stop()


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


def chart(where, fig, key: str) -> None:
    """Draw a figure; plotly's camera button downloads it as PNG or SVG, as chosen in the sidebar."""
    fmt = st.session_state.get("figure_format", "png")
    where.plotly_chart(fig, key=key, config={"displaylogo": False,
                                             "toImageButtonOptions": {"format": fmt, "filename": key, "scale": 2}})


def draw(drawing: views.Drawing, where=st, prefix: str = "") -> None:
    """Draw a view's rows in ``where``: the row's subheader and caption, then its panels side by side.

    ``prefix`` keeps the keys of two drawings on one page apart (a premise and a hypothesis).
    """
    for row in drawing.rows:
        if row.title:
            where.subheader(row.title)
        if row.caption:
            where.caption(row.caption)
        places = where.columns(len(row.panels)) if len(row.panels) > 1 else [where]
        for place, (key, panel) in zip(places, row.panels.items()):
            if isinstance(panel, views.Note):
                place.info(markup.markdown_label(panel.text))
            elif isinstance(panel, views.Html):
                place.html(panel.body)
            elif isinstance(panel, pd.DataFrame):
                # a table keyed by position needs no index column; one labelled by sentence keeps it
                place.dataframe(panel.style.format(precision=3), hide_index=isinstance(panel.index, pd.RangeIndex),
                                column_config=column_widths(panel))
            else:
                chart(place, panel, prefix + key)


HEADER_CHAR_PX = 8  # a character of a table's bold 14 px header, with room to spare
TABLE_PX = 900  # the width a table may count on: the main column at a 1400-px window, with room to spare


def column_widths(table: pd.DataFrame, wide: int = 40) -> dict:
    """Columns of long text (over ``wide`` characters) at widths that share :data:`TABLE_PX` with the others
    (about 100 px each), instead of as wide as their text: otherwise a long column pushes the ones after it
    (a verdict, a count) off the screen. The whole text shows on hover."""
    long = [c for c in table.columns
            if not pd.api.types.is_numeric_dtype(table[c]) and table[c].astype(str).str.len().max() > wide]
    # a column of short values under a longer header ("other pairs below “glass”") as wide as the header,
    # which the table would otherwise cut
    headed = {c: st.column_config.Column(width=int(len(str(c)) * HEADER_CHAR_PX) + 32) for c in table.columns
              if c not in long and len(table) and len(str(c)) > table[c].astype(str).str.len().max()}
    if not long:
        return headed
    share = max(200, (TABLE_PX - 100 * (len(table.columns) + 1 - len(long))) // len(long))
    return {**headed, **{c: st.column_config.Column(width=share) for c in long}}


def downloads(sentence: SentenceTrace, key: str, where=st, role: str = "sentence") -> None:
    """Buttons that download the sentence's whole trace as a zip of CSVs or as an npz, named by the
    sentence's role in a pair ("disan-trace-premise.zip").

    The files are built only when a button is clicked; the button spins until the file is ready (a
    200-token trace makes a 50 MB CSV zip in a few seconds).
    """
    c1, c2 = where.columns(2)
    tokens, trace = sentence.tokens, sentence.trace
    name = "disan-trace" if role == "sentence" else f"disan-trace-{role}"
    c1.download_button("Trace as CSV (zip)", lambda: trace_csv(tokens, trace), f"{name}.zip",
                       "application/zip", key=f"{key}-csv", on_click="ignore",
                       help="One CSV per table: attention one row per attended cell (query j, key i) with a "
                            "column per feature, gates and states one row per token and feature.")
    c2.download_button("Trace as NPZ", lambda: trace_npz(tokens, trace), f"{name}.npz",
                       "application/octet-stream", key=f"{key}-npz", on_click="ignore")


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


def upload(label: str, formats: Sequence[str], key: str):
    """A file uploader of the app, for files in ``formats``, bounded by the app's one upload bound
    (:func:`disan.data.uploads.upload_limit_mb`, from ``DISAN_UPLOAD_MB``), which its label states with
    the formats: the uploaded file, or None while there is none. ValueError for a bad ``DISAN_UPLOAD_MB``;
    DataError for a file over the bound (the browser refuses those first; this is the server's own check)."""
    limit = uploads.upload_limit_mb()
    file = st.file_uploader(f"{label} ({', '.join(formats)}; UTF-8; up to {limit} MB)",
                            type=[f.lstrip(".") for f in formats], max_upload_size=limit, key=key)
    if file is not None:
        uploads.check_size(file.size, limit)
    return file
