"""Fusion gates F of both DiSA blocks (the paper's Fig. 5): how much of h each token keeps."""
import streamlit as st

from disan.app.common import (
    downloads,
    draw,
    drawing_width,
    page_sentences,
    side_by_side,
)
from disan.explore import views

st.header("Fusion gates")
st.caption("u = F ⊙ h + (1 − F) ⊙ s: F near 1 keeps the token's own h, near 0 takes the attention output s.")

sentences = page_sentences(views.VIEWS["gates"])
for role, sentence, where in side_by_side(sentences):
    draw(views.gates(sentence, views.GatesOptions(), drawing_width(sentences)), where,
         prefix=f"{role}-" if len(sentences) > 1 else "")
    downloads(sentence, f"gates-{role}", where, role)
