"""Shareable links: the model and the input in the URL's query parameters.

``?model=<checkpoint directory name>&text=<sentence>`` (a pair model reads ``text`` as the premise and
``hypothesis`` as the hypothesis); ``&feature=<k>`` opens the Attention page on one feature k. A link is
untrusted input: an unknown model, a text that :func:`disan.data.text.check_text` refuses, a feature
that is not a number, or a parameter of another name gives a message and leaves the default in place
(the Attention page checks k against the model's features).

:func:`input_state` says which of the sidebar's values show a text: a link to the Attention page
(:func:`attention_url`) and :func:`disan.app.traces.open_in_attention` both go by it.
"""
from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlencode

from disan.data.kinds import kind_of
from disan.data.text import check_text
from disan.render.markup import quoted

PARAMS = ("model", "text", "hypothesis", "feature")  # the query parameters a link may hold


def read(params: Mapping[str, str], kinds: Mapping[str, str], default: str | None) -> tuple[dict, list[str]]:
    """(session values, messages) from a URL's query parameters.

    ``kinds``: the working checkpoints' names and kinds (names of :data:`disan.data.kinds.KINDS`); ``default``:
    the checkpoint used when the link names none (or a bad one). The values are the session keys the
    app reads: ``checkpoint``, ``text`` or ``premise`` and ``hypothesis``, and the Attention page's
    ``attention-mode`` and ``attention-k`` for a feature; a bad value is left out, with a message saying why.
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
    unknown = [name for name in params if name not in PARAMS and not name.startswith("embed")]  # embed*: Streamlit's
    if unknown:
        shown = ", ".join(quoted(name[:20]) for name in unknown[:5])
        messages.append(f"The link's {shown} {'is' if len(unknown) == 1 else 'are'} not read here and "
                        f"{'was' if len(unknown) == 1 else 'were'} left out: a link reads {', '.join(PARAMS)} "
                        f"(a pair's premise is its text).")
    feature = params.get("feature")
    if feature is not None:
        if feature.isascii() and feature.isdigit():
            values.update({"attention-mode": "one feature", "attention-k": int(feature)})
        else:
            messages.append(f"The link's feature {quoted(feature[:20])} is not a feature number; showing the default.")
    return values, messages


def write(checkpoint: str | None, kind: str | None, state: Mapping[str, str],
          feature: int | None = None) -> dict[str, str]:
    """The query parameters that link to a checkpoint and the input in ``state`` (the session's values),
    and to the Attention page's feature ``feature`` when given."""
    if checkpoint is None:
        return {}
    if kind is not None and kind_of(kind).pairs:
        params = {"text": state.get("premise"), "hypothesis": state.get("hypothesis")}
    else:
        params = {"text": state.get("text")}
    if feature is not None:
        params["feature"] = str(int(feature))
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
