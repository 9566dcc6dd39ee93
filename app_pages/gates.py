"""Fusion gates F of both DiSA blocks (the paper's Fig. 5): how much of h each token keeps."""
import streamlit as st

from disan.app.opening import view_page

st.header("Fusion gates")
st.caption("u = F ⊙ h + (1 − F) ⊙ s: F near 1 keeps the token's own h, near 0 takes the attention output s.")

view_page("gates", "gates")
