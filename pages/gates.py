"""Fusion gates F of both directions (the paper's Fig. 5): how much of h each token keeps."""
import numpy as np
import streamlit as st
from disan.app.common import chart, downloads, page_sentence

from disan.explore import figures

st.header("Fusion gates")
st.caption("u = F ⊙ h + (1 − F) ⊙ s: F near 1 keeps the token's own h, near 0 takes the attention output s.")

sentence = page_sentence("gates-sentence", "forward", "fusion gates")
if sentence is not None:
    tr, tokens = sentence.trace, sentence.tokens
    # keyed by block, since both blocks of DiSAN without directions are "diag"
    gates = {f"block 1 ({tr.forward.direction})": np.asarray(tr.forward.gate),
             f"block 2 ({tr.backward.direction})": np.asarray(tr.backward.gate)}
    chart(st, figures.mean_gate_bars(gates, tokens), key="gates-mean")
    c1, c2 = st.columns(2)
    chart(c1, figures.gate_heatmap(np.asarray(tr.forward.gate), tokens, f"{tr.forward.direction} gate"),
                    key="gates-fw")
    chart(c2, figures.gate_heatmap(np.asarray(tr.backward.gate), tokens, f"{tr.backward.direction} gate"),
                    key="gates-bw")
    downloads(sentence, "gates")
