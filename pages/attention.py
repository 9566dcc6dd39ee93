"""Token2token attention of both DiSA blocks (the paper's Fig. 4), per feature or reduced."""
import streamlit as st
from disan.app.common import downloads, draw, page_sentence

from disan.explore import views

st.header("Token2token attention")
st.caption("Rows: the query token j. Columns: the attended token i. Grey cells are masked "
           "(forward: j attends only to earlier tokens; backward: only to later ones).")

sentence = page_sentence("attention-sentence", views.VIEWS["attention"])
if sentence is not None:
    tr, tokens = sentence.trace, sentence.tokens
    mode = st.radio("Features", views.MODES, horizontal=True, key="attention-mode",
                    help="Each of the d_h features has its own attention distribution.")
    feature = rank_by = None
    if mode == "one feature":
        feature = int(st.number_input("Feature k", 0, views.feature_count(tr) - 1, 0, key="attention-k"))
    elif mode == "sharpest features":
        rank_by = st.radio("Rank by the entropy of", views.block_names(tr), horizontal=True, key="attention-rank")
        feature = st.selectbox("Feature (sharpest first)", views.sharpest_features(tr, rank_by),
                               key="attention-ranked", format_func=lambda k: f"k = {k}")
    query = st.selectbox("Query token j (for the per-feature views)", range(len(tokens)), index=len(tokens) - 1,
                         key="attention-query", format_func=lambda j: views.token_label(tokens, j))
    draw(views.attention(sentence, views.AttentionOptions(mode, feature, rank_by, query)))
    downloads(sentence, "attention")
