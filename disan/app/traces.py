"""The server's traces: one per (model, sentence), bounded in bytes and shared by every session and page; the
sidebar's input, and opening an input on the Attention page."""
from __future__ import annotations

import streamlit as st

from disan.app.links import input_state
from disan.app.models import checkpoint_args, load_pipeline
from disan.data.text import MAX_TOKENS, check_text, tokenizer_version
from disan.inspect.pipeline import SentenceTrace, TraceResult
from disan.render import views
from disan.store import diskcache, keys
from disan.store.memory import ByteCache, budget, cache_bytes


SENTENCE_HELP = f"Up to {MAX_TOKENS} tokens; attention memory grows with the square of the length."


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
