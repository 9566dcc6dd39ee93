"""The shipped and trained checkpoints with their model cards and metrics."""
import streamlit as st
from disan.app.common import chart, entries

from disan.explore import figures
from disan.nn import checkpoint

st.header("Models")
items = entries()
if not items:
    st.info("No checkpoint yet.")
for e in items:
    with st.expander(e.label, expanded=False):
        if not e.ok:
            st.error(e.error)
            continue
        st.markdown(checkpoint.card(e.path) or "_no model card_")
        metrics = checkpoint.read_json(checkpoint.resolve(e.path) / checkpoint.METRICS, "metrics.json")
        history = metrics.get("history") or []
        if history:
            keys = [k for k in history[0] if k.startswith(("dev_", "train_")) and k != "dev_n"]
            chart(st, figures.curves(history, keys), key=f"models-curves-{e.name}")
