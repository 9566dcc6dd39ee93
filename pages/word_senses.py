"""The same word in two or more contexts: its attention vectors one above the other (the paper's Fig. 6)."""
import numpy as np
import pandas as pd
import streamlit as st
from disan.app.common import cached_sentence, chart, current_pipeline, stamp

from disan.explore import figures, senses, tables

st.header("Word senses")
st.caption("DiSAN's attention is a vector per token: the same word gets a different vector in a different context.")

entry, pipe = current_pipeline()
if pipe is not None:
    preset = st.selectbox("Preset", ["(your own sentences)"] + list(senses.PRESETS), key="senses-preset")
    if preset in senses.PRESETS and st.session_state.get("senses-loaded") != preset:
        st.session_state["senses-text"] = "\n".join(senses.PRESETS[preset])
        st.session_state["senses-loaded"] = preset
    st.session_state.setdefault("senses-text", "\n".join(senses.PRESETS["glass (paper, Fig. 6)"]))
    text = st.text_area("Sentences, one per line", key="senses-text", height=110)
    lines = [line for line in text.splitlines() if line.strip()]
    traces = []
    for line in lines:
        try:
            traces.append(cached_sentence(str(entry.path), stamp(entry.path), line))
        except ValueError as e:
            st.warning(f"{line[:60]!r}: {e}")
    if len(traces) < 2:
        st.info("Type at least two sentences that share a word.")
        st.stop()
    if traces[0].trace.forward is None and traces[0].trace.source2token is None:
        st.info(f"The {entry.encoder} encoder has no per-token attention vectors.")
        st.stop()
    words = senses.shared_words([t.tokens for t in traces])
    if not words:
        st.info("The sentences share no word; the word must appear in every sentence.")
        st.stop()
    default = next((i for i, w in enumerate(words) if len(w) > 3), 0)
    word = st.selectbox("Word", words, index=default, key="senses-word")
    kinds = [k for k in senses.VECTORS if k != "output" or traces[0].trace.forward is not None]
    kind = st.radio("Vector", kinds, format_func=senses.VECTORS.get, horizontal=True, key="senses-kind")
    vectors = [senses.word_vector(t.tokens, t.trace, word, kind) for t in traces]
    labels = [f"{i + 1}: {t.text[:50]}" for i, t in enumerate(traces)]
    chart(st, figures.word_sense_heatmaps(vectors, labels, f"“{word}”: {senses.VECTORS[kind]}"),
                    key="senses-heatmaps")
    sim = figures.similarity_matrix(vectors)
    st.subheader("Cosine similarity")
    st.dataframe(pd.DataFrame(sim, index=labels, columns=labels).style.format("{:.3f}"))
    st.subheader("Features that differ most (sentences 1 and 2)")
    st.dataframe(tables.differing_features(np.asarray(vectors[0]), np.asarray(vectors[1])), hide_index=True)
