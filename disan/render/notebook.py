"""How the explorer's results show themselves in Jupyter: as HTML beside plotly's own output, so that a
notebook exported or rendered statically (nbconvert, a notebook viewer), which does not run plotly's
renderer, shows the figures too; a list of predictions as a table.

plotly.js travels once per kernel: inline in the first HTML output that draws a figure, then taken from
the page (``window.Plotly``) by every later one; never from a CDN, so a notebook works offline.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

_plotly_js_sent = False  # whether an HTML output of this kernel already carried plotly.js


def figure_html(fig: go.Figure) -> str:
    """A figure as an HTML fragment for a notebook cell, with plotly.js inline only the first time."""
    global _plotly_js_sent
    include, _plotly_js_sent = not _plotly_js_sent, True
    return fig.to_html(full_html=False, include_plotlyjs=include, default_width="100%")


class Figure(go.Figure):
    """A plotly figure that gives Jupyter an HTML rendering beside plotly's own (plotly's default
    renderer in a plain kernel gives only its JSON mimetype, which static viewers cannot draw)."""

    def __init__(self, fig: go.Figure):
        super().__init__(fig, _validate=False)  # fig was validated when it was built

    def _ipython_display_(self):  # plotly's own shows only its renderer's bundle, which this one extends
        from IPython.display import display  # only ever called inside IPython
        display(self._repr_mimebundle_(), raw=True)

    def _repr_mimebundle_(self, include=None, exclude=None, **kwargs):
        bundle = super()._repr_mimebundle_(include, exclude, **kwargs)
        if "text/html" not in bundle:  # a renderer that already gives HTML (Colab, VS Code) keeps its own
            bundle["text/html"] = figure_html(self)
        return bundle


def predictions_table(predictions) -> pd.DataFrame:
    """Predictions (each with ``label``, ``probs`` and ``score``), a row per input: the predicted class (for
    relatedness the expected score), then the probability of every class (score level) as ``p_<label>``, the
    columns ``disan predict`` writes."""
    rows = [{**({"prediction": p.label} if p.score is None else {"score": p.score}),
             **{f"p_{label}": v for label, v in p.probs.items()}} for p in predictions]
    return pd.DataFrame(rows).rename_axis("input")


def predictions_html(predictions) -> str:
    """A list of predictions as Jupyter shows it: :func:`predictions_table` to 3 decimals, cut by pandas to
    its ``display.max_rows`` when long."""
    return predictions_table(predictions).round(3)._repr_html_()
