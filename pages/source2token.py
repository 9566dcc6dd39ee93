"""Multi-dimensional source2token attention: which tokens make up the sentence encoding, per feature."""
import streamlit as st
from disan.app.common import downloads, draw, page_sentence

from disan.explore import views

st.header("Source2token attention")
st.caption("s = Σ_i P_i ⊙ x_i: every feature of the sentence encoding has its own distribution over tokens.")

sentence = page_sentence("s2t-sentence", views.VIEWS["source2token"])
if sentence is not None:
    draw(views.source2token(sentence, views.Source2TokenOptions()))
    downloads(sentence, "s2t")
