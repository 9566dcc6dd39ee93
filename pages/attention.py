"""Forward and backward token2token attention (the paper's Fig. 4), per feature or reduced."""
import numpy as np
import streamlit as st
from disan.app.common import chart, downloads, page_sentence, token_label

from disan.explore import figures

st.header("Token2token attention")
st.caption("Rows: the query token j. Columns: the attended token i. Grey cells are masked "
           "(forward: j attends only to earlier tokens; backward: only to later ones).")

sentence = page_sentence("attention-sentence", "blocks", "token2token attention; see the Source2token page")
if sentence is not None:
    tr, tokens = sentence.trace, sentence.tokens
    n = len(tokens)
    first, second = tr.blocks
    fw, bw = np.asarray(first.probs), np.asarray(second.probs)  # (n, n, d_h)
    fw_mask, bw_mask = np.asarray(first.mask), np.asarray(second.mask)
    d_h = fw.shape[-1]

    mode = st.radio("Features", ["mean", "max", "one feature", "sharpest features"], horizontal=True,
                    key="attention-mode", help="Each of the d_h features has its own attention distribution.")
    if mode == "one feature":
        k = st.number_input("Feature k", 0, d_h - 1, 0, key="attention-k")
        reduce_fw = reduce_bw = int(k)
    elif mode == "sharpest features":
        name = st.radio("Rank by the entropy of", [first.name, second.name], horizontal=True, key="attention-rank")
        probs, mask = (fw, fw_mask) if name == first.name else (bw, bw_mask)
        ranked = figures.rank_features(probs, mask, top=20)
        k = st.selectbox("Feature (sharpest first)", ranked, key="attention-ranked",
                         format_func=lambda f: f"k = {f}")
        reduce_fw = reduce_bw = int(k)
    else:
        reduce_fw = reduce_bw = mode
    m_fw, m_bw = figures.reduce_features(fw, reduce_fw), figures.reduce_features(bw, reduce_bw)
    chart(st, figures.attention_pair(m_fw, m_bw, tokens, fw_mask, bw_mask,
                                           titles=(f"{first.name} DiSA", f"{second.name} DiSA")),
                    key="attention-pair")

    st.subheader("One query token, every feature")
    j = st.selectbox("Query token j", range(n), index=n - 1 if n else 0, key="attention-query",
                     format_func=lambda i: token_label(tokens, i))
    c1, c2 = st.columns(2)
    chart(c1, figures.query_view(fw, j, tokens, fw_mask), key="attention-query-fw")
    chart(c2, figures.query_view(bw, j, tokens, bw_mask), key="attention-query-bw")

    st.subheader("Forward − backward")
    chart(st, figures.difference_heatmap(m_fw, m_bw, tokens), key="attention-diff")
    downloads(sentence, "attention")
