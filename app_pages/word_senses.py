"""The same word in two or more contexts: its attention vectors one above the other (the paper's Fig. 6)."""
import streamlit as st

from disan.app.traces import cached_sentence
from disan.app.models import checkpoint_args, current_pipeline
from disan.app.drawing import draw
from disan.app.widgets import kept, persistent, setting
from disan.render import markup, views
from disan.inspect import senses

OWN = "(your own sentences)"
FIRST = "glass (paper, Fig. 6)"

st.header("Word senses")
st.caption("DiSAN's attention is a vector per token: the same word gets a different vector in a different context.")


def load_preset() -> None:
    if st.session_state["senses-preset"] in senses.PRESETS:
        st.session_state["senses-text"] = "\n".join(senses.PRESETS[st.session_state["senses-preset"]])


def edited() -> None:
    st.session_state["senses-preset"] = OWN  # the text is no longer the preset's


entry, pipe = current_pipeline()
persistent(st.selectbox, "Preset", "senses-preset", after=load_preset, default=FIRST, options=[OWN, *senses.PRESETS])
text = persistent(st.text_area, "Sentences, one per line", "senses-text", after=edited,
                  default="\n".join(senses.PRESETS[FIRST]), height=110)
traces = []
for line in filter(str.strip, text.splitlines()):
    try:
        traces.append(cached_sentence(*checkpoint_args(entry), line))
    except ValueError as e:
        st.warning(markup.markdown_label(f"{markup.quoted(views.shorten(line, 60))}: {e}"))
# The vector choice is drawn whatever the sentences, so that it never leaves the page and comes
# back showing a choice other than the one the chart uses.
kinds = senses.vector_kinds(traces[0].trace) if traces else list(senses.VECTORS)
kind = setting(st.radio, "Vector", "senses-kind", kinds, format_func=senses.VECTORS.get, horizontal=True,
               disabled=not traces)
try:
    words, _ = views.senses_choices(traces)
except views.Unavailable as e:
    st.info(markup.markdown_label(str(e)))
    st.stop()
word = setting(st.selectbox, "Word", "senses-word", words, default=words[views.default_word(words)])
# a picker per sentence that has the word more than once, side by side
places = [senses.positions(s.tokens, word) for s in traces]
repeated = [i for i, p in enumerate(places) if len(p) > 1]
columns = dict(zip(repeated, st.columns(len(repeated)))) if repeated else {}
occurrences = []
for i, p in enumerate(places):
    if i not in columns:
        occurrences.append(0)
        continue
    key = f"senses-occurrence-{i}"
    kept(key, [word, *traces[i].tokens], 0)  # another word or sentence starts from the first occurrence
    labels = [markup.markdown_label(views.occurrence_label(traces[i].tokens, position)) for position in p]
    which = markup.markdown_label(f"Which {markup.quoted(word)} in sentence {i + 1}")
    occurrences.append(persistent(columns[i].radio, which, key, options=range(len(p)), format_func=labels.__getitem__))
draw(views.word_senses(traces, views.SensesOptions(word, kind, tuple(occurrences))))
