"""Multi-dimensional source2token attention: which tokens make up the sentence encoding, per feature."""
import streamlit as st

from disan.app.opening import view_page
from disan.analyses import explainers

st.header("Source2token attention")
st.caption("s = Σ_i P_i ⊙ x_i: every feature of the sentence encoding has its own distribution over tokens.")

view_page("source2token", "s2t", (explainers.SOURCE2TOKEN,))
