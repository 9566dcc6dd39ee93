"""Faithfulness: is the attention an explanation of the prediction? Erasure, interventions and randomisation,
each against its null."""
import streamlit as st

from disan.app import analyses as glue
from disan.app.common import current_pipeline, draw
from disan.explore.analyses import corpus, faithfulness
from disan.explore.kinds import look_of
from disan.inspect.pipeline import load

st.header("Faithfulness")
st.caption("A heatmap invites a reading: “the model looked at this word”. Here each explanation of the prediction "
           "(source2token importance, the attention each DiSA block gives a token as lift over uniform, the "
           "gate-weighted attention, gradient × input, integrated gradients, leave-one-out) is tested: removing "
           "its top tokens should move the output more than removing random ones (ERASER's comprehensiveness and "
           "sufficiency); replacing the attention should move it more than noise of the same size; and an "
           "explanation should change when the model it explains is destroyed. Intervals are 95% bootstrap "
           f"intervals over inputs; below {faithfulness.MIN_SENTENCES} inputs there is no verdict.")

entry, pipe = current_pipeline()
missing = glue.no_split(entry)
if missing is not None:
    st.info(missing)
    st.stop()
c1, c2, c3 = st.columns(3)
n = int(c1.number_input("Test inputs sampled", 1, 2000, 100, step=50, key="faith-n"))
removal = c2.radio("Removed tokens", faithfulness.REMOVALS, horizontal=True, key="faith-removal",
                   format_func={"delete": "deleted", "unk": "as <unk>"}.get)
side = faithfulness.BOTH
if pipe.is_pair:
    side = c3.radio("Side ranked and removed", [faithfulness.BOTH, *look_of(pipe.kind).sentences], horizontal=True,
                    key="faith-side")
settings = faithfulness.Settings(removal=removal, side=side)
try:
    items = corpus.trained_items(entry.config, "test", n)
except (glue.DataError, ValueError, OSError) as e:
    st.error(f"The test split of {entry.task} cannot be read: {e}")
    st.stop()

erasure, interventions, randomisation = st.tabs(["Erasure", "Interventions", "Randomisation"])
with erasure:
    bar, slot = st.progress(0.0, text="Erasing…"), st.empty()
    for done, summary, _ in faithfulness.refine_erasure(pipe, items, settings):
        bar.progress(done / len(items), text=f"{done} of {len(items)} inputs")
        with slot.container():  # a partial summary's figures keyed apart from the final one's (one key, one element)
            draw(faithfulness.erasure_drawing(summary, pipe), prefix="" if done == len(items) else f"{done}-")
with interventions:
    if st.button("Replace the attention", key="faith-intervene"):
        bar, slot = st.progress(0.0, text="Intervening…"), st.empty()
        for done, summary in faithfulness.refine_interventions(pipe, items, settings):
            bar.progress(done / len(items), text=f"{done} of {len(items)} inputs")
            with slot.container():
                draw(faithfulness.intervention_drawing(summary), prefix="" if done == len(items) else f"{done}-")
with randomisation:
    if st.button(f"Cascading model randomisation ({min(n, faithfulness.CASCADE_SENTENCES)} inputs)",
                 key="faith-cascade"):
        with st.spinner("Randomising the model from the top…"):
            result = faithfulness.cascade(pipe, items[:faithfulness.CASCADE_SENTENCES], settings)
        draw(faithfulness.agreement_drawing(result, "Cascading model randomisation"))
    shuffled = st.text_input("A model of the same settings trained on shuffled labels (its checkpoint folder, "
                             "e.g. runs/trec-shuffled-labels from `scripts/reproduce.sh faithfulness`)",
                             key="faith-shuffled")
    if shuffled:
        try:
            other = load(shuffled)
        except ValueError as e:
            st.error(str(e))
            st.stop()
        with st.spinner("Explaining both models…"):
            result = faithfulness.data_randomisation(pipe, other, items[:faithfulness.CASCADE_SENTENCES], settings)
        draw(faithfulness.agreement_drawing(result, "Data randomisation: trained against shuffled labels"))
