"""Widget state across pages and reruns: values kept in the session, settings, the token window, uploads; and
the URL, which carries the settings a page draws (the keys of :data:`disan.app.links.SETTINGS`).

Every setting a link carries goes through :func:`persistent` (which :func:`setting`, :func:`number`,
:func:`tabs` and :func:`token_window` call): there a link's value is checked against the widget's bounds
(:func:`disan.app.links.bounded`) and taken as the page's before the widget is drawn (:func:`follow`), and
the value drawn is written to the URL, or left out of it while it is the page's default (:func:`show`;
the defaults are those of :func:`kept`, :func:`setting`, :func:`number` and :func:`tabs`, or a
:func:`persistent` default). :func:`start_url`, at the start of each run of the app, makes the URL the model
and its input and the settings the page drew on its previous run, so that a setting of another page, or one
this page no longer draws, leaves the URL.
"""
from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from disan.app import links
from disan.data import uploads
from disan.render import markup, views

SHOWN = "link-shown"  # the page and the carried settings drawn since its last run began
DEFAULTS = "link-defaults"  # each carried setting's default: the URL leaves it out while the value is that
_UNSET = object()


def start_url(base: dict[str, str], page: str) -> None:
    """At the start of a run of the app on ``page``: the URL's parameters become ``base`` (the model and its
    input), the settings of ``page`` drawn on its previous run, and the link's settings not drawn yet (those
    of the page the link opened; another page drops them)."""
    shown = st.session_state.get(SHOWN)
    if shown is not None and shown["page"] != page:
        st.session_state[links.LINKED] = {}
    drawn = shown["keys"] if shown is not None and shown["page"] == page else set()
    waiting = st.session_state.get(links.LINKED, {})
    params = st.query_params.to_dict()
    wanted = {**base, **{k: v for k, v in params.items() if k in drawn or k in waiting}}
    if params != wanted:
        st.query_params.from_dict(wanted)
    st.session_state[SHOWN] = {"page": page, "keys": set()}


def remember(key: str, default) -> None:
    """``default`` is the value of the carried setting ``key`` where no one chose another (the URL leaves it out)."""
    if links.setting_of(key) is not None:
        st.session_state.setdefault(DEFAULTS, {})[key] = default


def follow(key: str, options: Sequence | None = None, low: int | None = None, high: int | None = None) -> None:
    """Where the link that opened the session gives the setting ``key`` and its widget has not been drawn since,
    its value becomes the page's (``st.session_state[key]``), checked against the widget's ``options`` or
    ``low`` and ``high`` bounds (:func:`disan.app.links.bounded`); a value brought inside the bounds or not
    used is said in a message where the widget is drawn."""
    waiting = st.session_state.get(links.LINKED)
    if not waiting or key not in waiting:
        return
    text = waiting.pop(key)
    try:
        value, message = links.bounded(key, text, st.session_state[key], options, low, high)
        st.session_state[key] = value
    except ValueError as e:
        message = str(e)
    if message:
        st.warning(markup.markdown_label(message))


def show(key: str) -> None:
    """The URL follows the carried setting ``key`` as drawn: its value (:func:`disan.app.links.encoded`), or
    nothing while it is the page's default."""
    if links.setting_of(key) is None:
        return
    st.session_state.setdefault(SHOWN, {"page": None, "keys": set()})["keys"].add(key)
    value = st.session_state[key]
    default = st.session_state.get(DEFAULTS, {}).get(key, _UNSET)
    if default is not _UNSET and value == default:
        if key in st.query_params:
            del st.query_params[key]
    elif st.query_params.get(key) != links.encoded(value):
        st.query_params[key] = links.encoded(value)


def persistent(widget, label, key: str, after=None, default=_UNSET, **kwargs):
    """A widget whose value lives in ``st.session_state[key]`` across pages and reruns that do not draw it.

    Streamlit forgets the state of a widget that a run does not draw, so the widget works on a
    shadow key and copies its value to the plain key that the pages read; ``after`` runs once the
    value is copied. Setting the shadow key on every run also sends the value to the browser, so the
    widget never shows a choice other than the one the page uses. ``st.session_state[key]`` must be
    set before the call, or ``default`` given: the value until the user (or a link) chooses another.

    A setting that links carry (:data:`disan.app.links.SETTINGS`) takes a link's value first, checked against
    the widget's ``options`` (any text, where the widget accepts new options) or ``min_value`` and
    ``max_value``, and the URL follows it (:func:`follow`, :func:`show`).
    """
    if default is not _UNSET:
        st.session_state.setdefault(key, default)
        remember(key, default)
    options = None if kwargs.get("accept_new_options") else kwargs.get("options")
    follow(key, options, kwargs.get("min_value"), kwargs.get("max_value"))
    shadow = f"_{key}"
    st.session_state[shadow] = st.session_state[key]

    def keep():
        st.session_state[key] = st.session_state[shadow]
        if after is not None:
            after()
    drawn = widget(label, key=shadow, on_change=keep, **kwargs)
    show(key)
    return drawn


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
        remember(key, st.session_state[key])
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
    default = options[0] if default is None else default
    remember(key, default)
    if st.session_state.get(key) not in options:
        st.session_state[key] = default
    return persistent(widget, label, key, options=options, **kwargs)


def number(where, label: str, key: str, low: int, high: int, default: int, **kwargs) -> int:
    """A :func:`persistent` whole number from ``low`` to ``high`` in ``where`` (a page's sample size, a k),
    ``default`` until the user chooses another; a kept value outside the bounds (another corpus's) is
    brought inside them."""
    remember(key, default)
    st.session_state[key] = min(max(st.session_state.get(key, default), low), high)
    return persistent(where.number_input, label, key, min_value=low, max_value=high, **kwargs)


def tabs(labels: Sequence[str], key: str):
    """A page's tabs (``st.tabs``) whose open tab is a :func:`persistent` setting, the first until the user
    opens another: a switch reruns the page, and each tab's ``open`` says whether it is the open one, so a
    page may compute only the open tab's content."""
    labels = list(labels)
    remember(key, labels[0])
    if st.session_state.get(key) not in labels:
        st.session_state[key] = labels[0]
    follow(key, labels)
    return persistent(st.tabs, labels, key)


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
