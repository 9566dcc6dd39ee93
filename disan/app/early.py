"""A session's first script run asks the browser for plotly.js before anything else.

Streamlit's browser code fetches and compiles its plotly chart (4.7 MB, 1.3–2.1 s on a 2-core machine) only
when the first plotly element arrives. Left to itself, that wait comes after the server's own: its imports
(2.5 s on a fresh server), the model and the first trace or stage. An empty figure sent first, hidden and
removed at the end of the run, makes the two waits overlap (docs/performance.md). Later runs of the
session find the chart's code loaded and send nothing.

This module imports Streamlit, plotly (both loaded with the server) and the modules plotly looks up without
importing them, and nothing heavier: ``app.py`` calls it before its other imports.

Every session's script runs in a thread of its own. Plotly finds numpy, pandas and PIL's image module in
``sys.modules`` (``get_module(name, should_load=False)``) and uses them: one that another session's thread
is still importing is half-made there, and plotly fails on it (``partially initialized module 'numpy' has no
attribute 'ndarray'``). Imported here first, with Python's import lock, a session waits for the other
thread's import to finish instead; past this module's import, every one of them is whole for the life of
the server.
"""
from __future__ import annotations

import numpy  # noqa: F401
import pandas  # noqa: F401
import PIL.Image  # noqa: F401
import plotly.graph_objects as go
import streamlit as st

# The hidden element's key; the latency tool leaves it out of the figures it times.
KEY = "plotly-early"
_SENT = "plotly-early-sent"


def start():
    """On the session's first run, the hidden empty figure (in a placeholder, returned); else None."""
    if st.session_state.get(_SENT):
        return None
    st.session_state[_SENT] = True
    st.html(f"<style>.st-key-{KEY} {{display: none}}</style>")  # style only: takes no room on the page
    slot = st.empty()
    slot.plotly_chart(go.Figure(), key=KEY, config={"staticPlot": True, "displayModeBar": False})
    return slot


def finish(slot) -> None:
    """Remove the hidden figure once the run has drawn its own."""
    if slot is not None:
        slot.empty()
