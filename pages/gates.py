"""Fusion gates F of both directions (the paper's Fig. 5): how much of h each token keeps."""
import numpy as np
import streamlit as st
from disan.app.common import chart, downloads, page_sentence

from disan.explore import figures

st.header("Fusion gates")
st.caption("u = F ⊙ h + (1 − F) ⊙ s: F near 1 keeps the token's own h, near 0 takes the attention output s.")

sentence = page_sentence("gates-sentence", "blocks", "fusion gates")
if sentence is not None:
    tr, tokens = sentence.trace, sentence.tokens
    first, second = tr.blocks
    gates = {block.name: np.asarray(block.gate) for block in tr.blocks}
    chart(st, figures.mean_gate_bars(gates, tokens), key="gates-mean")
    c1, c2 = st.columns(2)
    chart(c1, figures.gate_heatmap(gates[first.name], tokens, f"{first.name} gate"), key="gates-fw")
    chart(c2, figures.gate_heatmap(gates[second.name], tokens, f"{second.name} gate"), key="gates-bw")
    downloads(sentence, "gates")
