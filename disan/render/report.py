"""One standalone HTML file of a sentence (or a sentence pair): the prediction, the forward and backward
attention, the fusion gates, source2token and the attribution, with plotly.js embedded so that it opens
offline. :func:`report_file` makes the file's bytes for ``python -m disan report``, ``viz.report`` and the
app's report button, which trace the input (:func:`report_input` says what ``pipe.trace`` takes) and explain
it (:func:`disan.analyses.attribution.attributed`) first: the same input by the same model gives the same
bytes wherever it is made.

Every string from the user reaches the page escaped: the text through :func:`html.escape`, tokens through
the figures' own escaping (and plotly's JSON escaping of ``<`` and ``/`` inside the script tags), tables
through pandas' escaping.
"""
from __future__ import annotations

import html

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from disan.render import markup, views
from disan.render.attribution import drawing, followed
from disan.render.kinds import look_of

STYLE = """body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1400px;color:#222}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid #ddd}
.row{display:flex;flex-wrap:wrap;gap:1rem}.row>div{flex:1 1 600px;min-width:0}
table{border-collapse:collapse;font-size:.9rem}td,th{border:1px solid #ddd;padding:.2rem .5rem}
.muted{color:#666}"""


def report_input(pipe, text: str, hypothesis: str | None):
    """What ``pipe.trace`` takes: the text, or the (premise, hypothesis) pair of a pair model."""
    if pipe.is_pair:
        if hypothesis is None:
            raise ValueError("this is a sentence-pair model: give the hypothesis with --hypothesis")
        return text, hypothesis
    if hypothesis is not None:
        raise ValueError("this model takes one sentence; --hypothesis is only for sentence-pair models")
    return text


class _Page:
    """The report's body, section by section; plotly.js goes in with the first figure only. Figures are named
    by their place in the page (plotly would draw a random name for each), so a report is the same file
    each time it is made."""

    def __init__(self):
        self.parts: list[str] = []
        self.plotly_included = False
        self.figures = 0

    def heading(self, text: str, level: int = 2) -> None:
        self.parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def paragraph(self, text: str, css: str = "") -> None:
        self.parts.append(f'<p class="{css}">{html.escape(text)}</p>')

    def panel(self, panel) -> str:
        if isinstance(panel, pd.DataFrame):
            return panel.to_html(float_format=lambda v: f"{v:.3f}", border=0)
        if isinstance(panel, views.Html):  # built from escaped text only
            return panel.body
        if isinstance(panel, views.Note):
            return f'<p class="muted">{html.escape(panel.text)}</p>'
        self.figures += 1
        fragment = pio.to_html(panel, full_html=False, include_plotlyjs=not self.plotly_included,
                               config={"displaylogo": False}, div_id=f"figure-{self.figures}")
        self.plotly_included = True
        return fragment

    def figure(self, fig: go.Figure) -> None:
        self.parts.append(f'<div class="row"><div>{self.panel(fig)}</div></div>')

    def drawing(self, drawing: views.Drawing) -> None:
        for row in drawing.rows:
            if row.title:
                self.heading(row.title, 3)
            if row.caption:
                self.paragraph(row.caption, "muted")
            cells = "".join(f"<div>{self.panel(p)}</div>" for p in row.panels.values())
            self.parts.append(f'<div class="row">{cells}</div>')


def report_html(pipe, result, explained) -> str:
    """The standalone HTML report of one traced input (``pipe.trace`` of :func:`report_input`: a sentence;
    premise and hypothesis for a pair model) and its attributions beside its attention (``explained``)."""
    attr = explained.attribution
    page = _Page()
    name = pipe.path.name if pipe.path is not None else "model"
    page.heading(f"DiSAN report: {name} ({pipe.task}, {pipe.model.cfg.encoder})", 1)
    for label, sentence in zip(look_of(pipe.kind).sentences, result.sentences):
        page.paragraph(f"{label}: {sentence.text}")
    if result.unknown:
        page.paragraph("Unknown words (embedded as <unk>): " + ", ".join(markup.quoted(t) for t in result.unknown),
                       "muted")
    page.heading(f"Prediction: {result.prediction.label}")
    page.figure(views.prediction(result))
    for label, sentence in zip(look_of(pipe.kind).sentences, result.sentences):
        suffix = f" ({label})" if pipe.is_pair else ""
        for view_name, title in (("attention", "Token2token attention"), ("gates", "Fusion gates"),
                                 ("source2token", "Source2token")):
            view = views.VIEWS[view_name]
            page.heading(title + suffix)
            if view.available(sentence.trace):
                page.drawing(view.draw(sentence, view.options()))
            else:
                page.paragraph(f"The {pipe.model.cfg.encoder} encoder has no {view.lacking}.", "muted")
    page.heading(f"Attribution to {markup.quoted(followed(attr, pipe.kind))}")
    page.paragraph(f"Integrated gradients ({attr.steps} steps, zero word vectors as the baseline): f(x) = "
                   f"{attr.value:.4f}, f(baseline) = {attr.baseline:.4f}, the attributions sum to within "
                   f"{abs(attr.completeness_gap):.2%} of the difference.", "muted")
    page.drawing(drawing(explained, pipe.kind))
    title = html.escape(f"DiSAN report: {result.sentences[0].text[:80]}")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
            f"<style>{STYLE}</style></head><body>\n" + "\n".join(page.parts) + "\n</body></html>\n")


def report_file(pipe, result, explained) -> bytes:
    """The report file (:func:`report_html`) as the bytes written: UTF-8, with the page's own line ends on every
    platform."""
    return report_html(pipe, result, explained).encode("utf-8")
