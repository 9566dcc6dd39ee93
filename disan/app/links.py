"""Shareable links: the model, the input and the page's settings in the URL's query parameters.

``?model=<checkpoint directory name>&text=<sentence>`` (a pair model reads ``text`` as the premise and
``hypothesis`` as the hypothesis); ``&feature=<k>`` opens the Attention page on one feature k; ``&digest=``
is the model's content digest when the link was made (:func:`version`), so that a link to a model that has
changed since says so. Each page setting of :data:`SETTINGS` is carried under its session key
(``&attention-mode=max&attention-query-sentence=3``): :mod:`disan.app.widgets` writes it while the page
draws it (and leaves it out while it is the page's default) and checks a link's value against the widget's
bounds when the widget is drawn (:func:`bounded`).

A link is untrusted input: an unknown model, a text that :func:`disan.data.text.check_text` refuses, a
feature that is not a number, a digest that is not one, or a parameter of another name gives a message and
leaves the default in place; so does a setting outside the widget's choices, and a number or a token window
outside its bounds is brought inside them, with a message (the Attention page checks k against the model's
features).

:func:`input_state` says which of the sidebar's values show a text: a link to the Attention page
(:func:`attention_url`) and :func:`disan.app.traces.open_in_attention` both go by it.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

from disan.data.kinds import kind_of
from disan.data.text import MAX_CHARS, check_characters, check_text
from disan.render.markup import quoted
from disan.store.keys import checkpoint_digest

PARAMS = ("model", "text", "hypothesis", "feature", "digest")  # the query parameters of the model and input
DIGEST = "link-digest"  # the session value read from ``digest``, compared with the model's by the app
LINKED = "link-settings"  # the session value of a link's page settings, {key: the URL's text}, until drawn
DIGEST_CHARACTERS = 12  # of the SHA-256: enough to tell two versions of a checkpoint apart

# The page settings a link carries, page by page: the session key of each, which is also its query parameter
# ("{role}" stands for sentence, premise or hypothesis, "{i}" for a number), and what a message calls it.
# Paths on the server (the Faithfulness page's model trained on shuffled labels) and uploads are not carried:
# a link from someone else would choose what the server opens.
SETTINGS = {
    "attention-mode": "features", "attention-scale": "colour scale", "attention-shade": "shading",
    "attention-rank": "block that ranks the features", "attention-query-{role}": "query token",
    "attention-window-{role}": "token window", "attention-k-{role}": "feature",
    "attention-ranked-{role}": "feature",
    "senses-preset": "preset", "senses-text": "sentences", "senses-kind": "vector", "senses-word": "word",
    "senses-occurrence-{i}": "occurrence",
    "corpus-source": "corpus", "corpus-task": "benchmark", "corpus-split": "split", "corpus-word": "word",
    "corpus-kind": "vector", "corpus-k-mode": "clusters", "corpus-k": "k", "corpus-colour": "colouring",
    "corpus-selected": "occurrence",
    "cf-tab": "tab", "cf-sentence": "sentence to change", "cf-op": "edit", "cf-position": "token",
    "cf-replacement": "replacement", "cf-edit-window": "token window", "cf-blocks": "blocks",
    "cf-keys": "attended tokens", "cf-queries": "query tokens", "cf-knockout-window": "token window",
    "attr-sample": "number of test sentences",
    "compare-other": "model B", "compare-sentence": "sentence", "compare-window": "token window",
    "case-source": "corpus", "case-task": "benchmark", "case-split": "split", "case-n": "number of sentences",
    "atlas-source": "corpus", "atlas-task": "benchmark", "atlas-split": "split", "atlas-n": "number of sentences",
    "atlas-k-mode": "types", "atlas-k": "k", "atlas-colour": "colouring", "atlas-block": "block",
    "atlas-sort": "sort", "atlas-feature": "feature", "atlas-search": "search",
    "faith-tab": "tab", "faith-n": "number of test inputs", "faith-removal": "removal", "faith-side": "side",
}
_PLACES = {"{role}": "(?:sentence|premise|hypothesis)", "{i}": "[0-9]{1,3}"}
_SETTING = {re.compile("".join(_PLACES.get(part, re.escape(part)) for part in re.split(r"(\{\w+\})", key))): key
            for key in SETTINGS}


def setting_of(key: str) -> str | None:
    """The entry of :data:`SETTINGS` that a session key (a query parameter) is, or None: a key a link does not
    carry."""
    return next((entry for pattern, entry in _SETTING.items() if pattern.fullmatch(key)), None)


def version(directory) -> str:
    """A short digest of what a checkpoint's outputs depend on (:func:`disan.store.keys.checkpoint_digest` as the
    app loads it: its files and the word vectors its open vocabulary reads here), the URL's ``digest``."""
    named = json.dumps(checkpoint_digest(directory), sort_keys=True).encode("utf-8")
    return hashlib.sha256(named).hexdigest()[:DIGEST_CHARACTERS]


def changed(name: str, linked: str, now: str) -> list[str]:
    """The message, if any, for a link made with ``linked`` (its ``digest``) to a model whose digest is ``now``."""
    if linked == now:
        return []
    return [f"The link was made with another version of {name} (digest {linked}; here it is {now}): the model's "
            "files or the word vectors it reads have changed since, so the figures may differ from the ones "
            "the link was made from."]


def read(params: Mapping[str, str], kinds: Mapping[str, str], default: str | None) -> tuple[dict, list[str]]:
    """(session values, messages) from a URL's query parameters.

    ``kinds``: the working checkpoints' names and kinds (names of :data:`disan.data.kinds.KINDS`); ``default``:
    the checkpoint used when the link names none (or a bad one). The values are the session keys the
    app reads: ``checkpoint``, ``text`` or ``premise`` and ``hypothesis``, and the Attention page's
    ``attention-mode`` and ``attention-k`` for a feature; :data:`DIGEST`, the link's model digest; and
    :data:`LINKED`, the page settings (:data:`SETTINGS`) as the URL gives them, which the widgets check when
    they are drawn. A bad value is left out, with a message saying why.
    """
    values, messages = {}, []
    model = params.get("model")
    if model is not None:
        if model in kinds:
            values["checkpoint"] = model
        else:
            shown = model if len(model) <= 60 else model[:59] + "…"
            messages.append(f"The link names the model {quoted(shown)}, which is not a working checkpoint here "
                            f"(the working ones: {', '.join(sorted(kinds)) or 'none'}); showing {default or 'none'}.")
    kind = kinds.get(values.get("checkpoint", default))
    pair = kind is not None and kind_of(kind).pairs
    fields = [("text", "premise" if pair else "text")] + ([("hypothesis", "hypothesis")] if pair else [])
    for param, key in fields:
        text = params.get(param)
        if text is None:
            continue
        try:
            check_text(text)
        except ValueError as e:
            messages.append(f"The link's {param} was not used ({e}); showing the default.")
            continue
        values[key] = text
    if "hypothesis" in params and not pair:
        messages.append("The link has a hypothesis, but the model reads single sentences; it was left out.")
    unknown = [name for name in params  # embed*: Streamlit's own
               if name not in PARAMS and setting_of(name) is None and not name.startswith("embed")]
    if unknown:
        shown = ", ".join(quoted(name[:20]) for name in unknown[:5])
        messages.append(f"The link's {shown} {'is' if len(unknown) == 1 else 'are'} not read here and "
                        f"{'was' if len(unknown) == 1 else 'were'} left out: a link reads {', '.join(PARAMS)} "
                        f"(a pair's premise is its text) and the pages' settings.")
    feature = params.get("feature")
    if feature is not None:
        if feature.isascii() and feature.isdigit():
            values.update({"attention-mode": "one feature", "attention-k": int(feature)})
        else:
            messages.append(f"The link's feature {quoted(feature[:20])} is not a feature number; showing the default.")
    digest = params.get("digest")
    if digest is not None:
        if re.fullmatch(f"[0-9a-f]{{{DIGEST_CHARACTERS}}}", digest):
            values[DIGEST] = digest
        else:
            messages.append(f"The link's digest {quoted(digest[:20])} is not a model's digest; it was left out.")
    settings = {name: text for name, text in params.items() if setting_of(name) is not None}
    if settings:
        values[LINKED] = settings
    return values, messages


def encoded(value) -> str:
    """A setting's value as its query parameter's text: a multiselect's choices joined by commas, a token window
    (first, last) as "first-last", anything else as its string; :func:`bounded` reads it back."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, tuple):
        return f"{value[0]}-{value[1]}"
    return str(value)


def listed(options: Sequence) -> str:
    """A widget's choices as a message lists them: a run of numbers by its ends, else the first few."""
    options = list(options)
    if options and all(isinstance(o, int) for o in options) and options == list(range(options[0], options[-1] + 1)):
        return f"{options[0]} to {options[-1]}"
    return ", ".join(quoted(o) for o in options[:6]) + (", …" if len(options) > 6 else "")


def bounded(key: str, text: str, current, options: Sequence | None = None, low: int | None = None,
            high: int | None = None) -> tuple[object, str | None]:
    """The value that a link's ``text`` (the URL's text of the setting ``key``) gives, shaped as the setting's
    ``current`` value and checked against the widget's ``options`` (a choice; a list: several choices) or its
    ``low`` and ``high`` bounds (a number; a (first, last) tuple: a token window), with a message where the
    link asked for more than the page allows and the value was brought inside the bounds. ValueError, saying
    why and what the page shows instead, where the text cannot be used; text without options (a sentence, a
    word) is checked for the characters a text may hold."""
    what = f"The link's {SETTINGS[setting_of(key)]}"
    shown = f"showing {quoted(encoded(current))}" if current not in (None, "", []) else "showing the default"
    if options is not None:
        by_text = {str(o): o for o in options}
        parts = [p for p in text.split(",") if p] if isinstance(current, list) else [text]
        unknown = [p for p in parts if p not in by_text]
        if unknown:
            raise ValueError(f"{what} {', '.join(quoted(p[:40]) for p in unknown[:3])} "
                             f"{'is' if len(unknown) == 1 else 'are'} not among this page's choices "
                             f"({listed(options)}); {shown}.")
        values = [by_text[p] for p in parts]
        return (values if isinstance(current, list) else values[0]), None
    if isinstance(current, (tuple, int)) and not isinstance(current, bool):
        pattern = r"([0-9]{1,9})-([0-9]{1,9})" if isinstance(current, tuple) else r"(-?[0-9]{1,9})"
        found = re.fullmatch(pattern, text)
        if not found:
            form = "two token numbers, first-last" if isinstance(current, tuple) else "a whole number"
            raise ValueError(f"{what} {quoted(text[:40])} is not {form}; {shown}.")
        asked = tuple(sorted(int(g) for g in found.groups()))
        inside = tuple(min(max(n, low), high) for n in asked)
        value = inside if isinstance(current, tuple) else inside[0]
        if inside == asked:
            return value, None
        return value, (f"{what} {encoded(asked if isinstance(current, tuple) else asked[0])} is outside what this "
                       f"page allows ({low} to {high}); showing {encoded(value)}.")
    if len(text) > MAX_CHARS:
        raise ValueError(f"{what} has {len(text):,} characters; the limit is {MAX_CHARS:,}; {shown}.")
    try:
        check_characters(text)
    except ValueError as e:
        raise ValueError(f"{what} was not used ({e}); {shown}.") from None
    return text, None


def write(checkpoint: str | None, kind: str | None, state: Mapping[str, str],
          feature: int | None = None, digest: str | None = None) -> dict[str, str]:
    """The query parameters that link to a checkpoint and the input in ``state`` (the session's values), with
    the checkpoint's ``digest`` (:func:`version`) when given, and to the Attention page's feature ``feature``
    when given."""
    if checkpoint is None:
        return {}
    if kind is not None and kind_of(kind).pairs:
        params = {"text": state.get("premise"), "hypothesis": state.get("hypothesis")}
    else:
        params = {"text": state.get("text")}
    if feature is not None:
        params["feature"] = str(int(feature))
    params["digest"] = digest
    return {"model": checkpoint, **{k: v for k, v in params.items() if v is not None}}


def input_state(kind: str, text: str, pair: tuple[str, str] | None = None) -> dict[str, str]:
    """The session values that make ``text`` the sidebar's input for a model of ``kind``: the sentence of
    a single-sentence model; for a pair model, ``pair`` as premise and hypothesis where the text has one,
    else the text as the premise (the hypothesis is left as it is)."""
    if not kind_of(kind).pairs:
        return {"text": text}
    if pair is not None:
        return {"premise": pair[0], "hypothesis": pair[1]}
    return {"premise": text}


def attention_url(checkpoint: str, kind: str, text: str, pair: tuple[str, str] | None = None,
                  feature: int | None = None) -> str:
    """A relative link that opens ``text`` (see :func:`input_state`) with a checkpoint in the Attention
    page, on its feature ``feature`` when given."""
    return "./?" + urlencode(write(checkpoint, kind, input_state(kind, text, pair), feature))
