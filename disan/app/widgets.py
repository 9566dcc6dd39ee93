"""Widget state across pages and reruns: values kept in the session, settings, the token window, uploads."""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from disan.data import uploads
from disan.render import views


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
