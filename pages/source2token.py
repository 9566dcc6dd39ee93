"""Multi-dimensional source2token attention: which tokens make up the sentence encoding, per feature."""
import numpy as np
import streamlit as st
from disan.app.common import chart, downloads, page_sentence

from disan.explore import figures

st.header("Source2token attention")
st.caption("s = Σ_i P_i ⊙ x_i: every feature of the sentence encoding has its own distribution over tokens.")

sentence = page_sentence("s2t-sentence", "source2token", "source2token attention")
if sentence is not None:
    tr, tokens = sentence.trace, sentence.tokens
    probs = np.asarray(tr.source2token.probs)  # (n, D)
    chart(st, figures.importance_bars(figures.token_importance(probs), tokens), key="s2t-importance")
    chart(st, figures.source2token_heatmap(probs, tokens), key="s2t-heatmap")
    downloads(sentence, "s2t")
