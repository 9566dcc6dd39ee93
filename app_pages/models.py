"""The shipped and trained checkpoints with their model cards and metrics."""
import streamlit as st

from disan.app import progress
from disan.app.drawing import chart
from disan.app.models import entries
from disan.inspect import catalog
from disan.render import figures

st.header("Models")
items = entries()
if not items:
    st.info("No checkpoint yet.")
for e in items:
    with st.expander(e.label, expanded=False):
        if not e.ok:
            st.error(f"{e.name} cannot be used: {e.error}")
            continue
        where = "Shipped with disan, read-only" if e.shipped else "Saved"
        st.caption(f"{where} in {e.path}. Predicts with the vocabulary {e.vocabulary}.")
        st.markdown(catalog.card(e) or "_no model card_")
        history = e.metrics.get("history") or []
        if history:
            curves = figures.curves(history, progress.curve_keys(history))
            chart(st, figures.describe(curves, f"model {e.name}"), key=f"models-curves-{e.name}")
