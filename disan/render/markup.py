"""Tokens as Streamlit shows them outside figures: labels for widgets that read Markdown, tokens quoted in
prose, stop words, and the sentence shaded token by token (as Ecco does), as HTML.

Tokens are untrusted text. Widget labels (``st.pills`` and the like) interpret Markdown, so
:func:`markdown_label` backslash-escapes every ASCII punctuation mark; the HTML of
:func:`shaded_sentence` is built from escaped text only, with colours and numbers computed here. A token
may be written right to left (Arabic, Hebrew): set among other words it would take the commas, quotes and
numbers beside it into its own direction and jumble the line ("Unknown words: “…”, “…”"), so a token quoted
in prose is isolated (:func:`isolated`, :func:`quoted`, :func:`bdi`).
"""
from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from plotly.colors import sample_colorscale

from disan.render.figures import (
    DIVERGING,  # as the figures: blue below the centre, white at it, red above
    MASKED_BG,  # a token without a value is outlined in the grey of a masked cell
)
from disan.inspect.measures import is_stop_word

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation mark, which CommonMark lets us escape


def markdown_label(text: str) -> str:
    """``text`` as a Markdown widget label that shows it literally (no emphasis, links, HTML, math or directives)."""
    return _PUNCTUATION.sub(r"\\\1", str(text))


# FIRST STRONG ISOLATE ... POP DIRECTIONAL ISOLATE (Unicode's bidirectional algorithm): what is between them takes
# its direction from its own first letter, and the text around it keeps its order as if it were one neutral mark
FSI = "\u2068"  # first strong isolate
PDI = "\u2069"  # pop directional isolate
# the explicit direction controls (embeddings, overrides, isolates): one inside a token would reach past the
# isolate around it (a stray PDI ends it early), and none shows anything
_DIRECTION_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")


def isolated(text) -> str:
    """Text set among other words in plain text (a caption, a note, a message, hover text), whatever direction
    it is written in: between :data:`FSI` and :data:`PDI`, without direction controls of its own."""
    return f"{FSI}{_DIRECTION_CONTROLS.sub('', str(text))}{PDI}"


def quoted(text) -> str:
    """A token (or a sentence) quoted in plain-text or Markdown prose: “text”, :func:`isolated`."""
    return f"“{isolated(text)}”"


def bdi(text) -> str:
    """Text set in HTML prose: escaped, in a ``<bdi>`` element, which isolates it as :func:`isolated` does."""
    return f"<bdi>{html.escape(_DIRECTION_CONTROLS.sub('', str(text)))}</bdi>"


def token_labels(tokens: Sequence[str]) -> list[str]:
    """Widget labels for a sentence's tokens, one per position: :func:`markdown_label` of each token, a
    repeated token made distinct by zero-width spaces ("the", "the\u200b", ...), which show nothing.

    Streamlit sends a choice back as its label and takes the last option with that label, so a click
    on the first "the" of "the cat saw the dog" would otherwise select the second.
    """
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        label = markdown_label(token)
        labels.append(label + "\u200b" * seen.get(label, 0))
        seen[label] = seen.get(label, 0) + 1
    return labels


def stop_words(tokens: Sequence[str]) -> list[bool]:
    """:func:`disan.inspect.measures.is_stop_word` of every token."""
    return [is_stop_word(t) for t in tokens]


@dataclass(frozen=True)
class Shading:
    """One value per token to shade a sentence by, and how to read it.

    ``ratio`` values (a lift) are compared with ``centre`` as ratios, on a log scale: x2 is as red as
    x0.5 is blue. Other values are compared as differences from ``centre``. NaN: the token has no value.
    """
    title: str
    values: np.ndarray  # (n,)
    centre: float
    ratio: bool

    def text(self, value: float) -> str:
        """How a value is written in the hover text and the legend."""
        if np.isnan(value):
            return "no value"
        return f"×{value:.3g}" if self.ratio else f"{value:.3f}"

    def positions(self) -> np.ndarray:
        """(n,) every value's place on the colour scale, from -1 (bluest) through 0 (white) to 1 (reddest);
        the scale spans the largest deviation from the centre (at least 10 %, or 0.02)."""
        values = np.asarray(self.values, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = np.log2(values / self.centre) if self.ratio else values - self.centre
        finite = np.abs(dev[np.isfinite(dev)])
        least = np.log2(1.1) if self.ratio else 0.02
        spread = max(float(finite.max()) if finite.size else 0.0, least)
        return np.clip(dev / spread, -1.0, 1.0)  # -inf (a value of 0) -> -1; NaN stays NaN


def shaded_sentence(tokens: Sequence[str], shading: Shading) -> str:
    """The sentence as HTML, each token's background coloured by its value (hover: the value).

    Every token and the title are HTML-escaped; nothing else in the output comes from the input.
    """
    positions = shading.positions()
    if len(positions) != len(tokens):
        raise ValueError(f"{len(positions)} values for {len(tokens)} tokens")
    colours = sample_colorscale(DIVERGING, list((np.nan_to_num(positions) + 1) / 2))  # one call: it is slow
    spans = []
    for token, value, pos, colour in zip(tokens, np.asarray(shading.values, dtype=float), positions, colours):
        label = html.escape(f"{isolated(token)}: {shading.text(value)}", quote=True)  # the hover text
        if np.isnan(pos):
            style = f"border:1px dashed {MASKED_BG}"
        else:
            style = f"background:{colour};color:{'white' if abs(pos) > 0.6 else 'black'}"
        spans.append(f'<span title="{label}" style="{style};padding:1px 4px;margin:2px 1px;border-radius:4px;'
                     f'display:inline-block">{html.escape(str(token))}</span>')
    centre = shading.text(shading.centre)
    legend = (f'<div style="font-size:0.85em;color:#555;margin-bottom:4px">{html.escape(shading.title)}: '
              f'white {html.escape(centre)}, red above, blue below; dashed: no value. Hover a token for its value.</div>')
    return f'<div style="line-height:2">{legend}{"".join(spans)}</div>'
