"""The same word in two or more contexts: its attention vectors one above the other (the paper's Fig. 6)."""
import streamlit as st
from disan.app.common import cached_sentence, current_pipeline, draw, stamp

from disan.explore import senses, views

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
    traces = []
    for line in filter(str.strip, text.splitlines()):
        try:
            traces.append(cached_sentence(str(entry.path), stamp(entry.path), line))
        except ValueError as e:
            st.warning(f"{line[:60]!r}: {e}")
    try:
        words, kinds = views.senses_choices(traces)
    except views.Unavailable as e:
        st.info(str(e))
        st.stop()
    word = st.selectbox("Word", words, index=views.default_word(words), key="senses-word")
    kind = st.radio("Vector", kinds, format_func=senses.VECTORS.get, horizontal=True, key="senses-kind")
    draw(views.word_senses(traces, views.SensesOptions(word, kind)))
