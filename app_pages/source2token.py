"""Multi-dimensional source2token attention: which tokens make up the sentence encoding, per feature."""
import streamlit as st

from disan.app.common import (
    downloads,
    draw,
    drawing_width,
    page_sentences,
    side_by_side,
)
from disan.explore import views

st.header("Source2token attention")
st.caption("s = Σ_i P_i ⊙ x_i: every feature of the sentence encoding has its own distribution over tokens.")

sentences = page_sentences(views.VIEWS["source2token"])
for role, sentence, where in side_by_side(sentences):
    draw(views.source2token(sentence, views.Source2TokenOptions(), drawing_width(sentences)), where,
         prefix=f"{role}-" if len(sentences) > 1 else "")
    downloads(sentence, f"s2t-{role}", where, role)
