"""Two checkpoints on one sentence: predictions, attention on one scale, and their difference."""
import streamlit as st

from disan.app.traces import current_input, run_trace
from disan.app.models import current_pipeline, entries, reads_pairs
from disan.app.drawing import draw
from disan.app.widgets import setting, token_window
from disan.render import compare as compare_render
from disan.render import views
from disan.analyses import compare

st.header("Compare models")
st.caption("Model A is the sidebar's; model B takes the same input. For example DiSAN against DiSAN without "
           "directions, an encoder without token2token attention, or two snapshots of one training run.")

entry, pipe = current_pipeline()
# B must take the same input as A: one sentence, or a premise and a hypothesis
others = [e for e in entries() if e.ok and e.name != entry.name and reads_pairs(e) == pipe.is_pair]
if not others:
    st.info("No other checkpoint takes the same input as this one. Train one on the Training page, e.g. the "
            "same task with the disan-nodir or bilstm encoder.")
    st.stop()
labels = {e.name: e.label for e in others}
chosen = setting(st.selectbox, "Model B", "compare-other", list(labels), format_func=labels.get)
other = next(e for e in others if e.name == chosen)  # drawn once: in the generator it was drawn per model
text = current_input(pipe)
result_a = run_trace(entry, text)
result_b = run_trace(other, text)
which = "sentence"
if pipe.is_pair:
    which = setting(st.radio, "Sentence", "compare-sentence", ["premise", "hypothesis"], horizontal=True)
sides = [compare.Side(e.name, e.encoder, r.prediction, getattr(r, which))
         for e, r in ((entry, result_a), (other, result_b))]
comparison = compare.comparison(*sides)
for label, said in zip("AB", compare_render.statements(comparison)):
    st.text(f"{label}: {said}")
tokens = sides[0].sentence.tokens
window = token_window(st, tokens, views.default_query(len(tokens)), "compare-window")
draw(compare_render.drawing(comparison, window=window))
