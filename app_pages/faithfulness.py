"""Faithfulness: is the attention an explanation of the prediction? Erasure, interventions and randomisation,
each against its null."""
import streamlit as st

from disan.app import analyses as glue
from disan.app import runner
from disan.app.models import checkpoint_args, current_checkpoint, reads_pairs
from disan.app.drawing import draw
from disan.app.widgets import persistent
from disan.analyses import faithfulness
from disan.render.faithfulness import agreement_drawing, erasure_drawing, intervention_drawing
from disan.render.kinds import look_of

st.header("Faithfulness")
st.caption("A heatmap invites a reading: “the model looked at this word”. Here each explanation of the prediction "
           "(source2token importance, the attention each DiSA block gives a token as lift over uniform, the "
           "gate-weighted attention, gradient × input, integrated gradients, leave-one-out) is tested: removing "
           "its top tokens should move the output more than removing random ones (ERASER's comprehensiveness and "
           "sufficiency); replacing the attention should move it more than noise of the same size; and an "
           "explanation should change when the model it explains is destroyed. Intervals are 95% bootstrap "
           f"intervals over inputs; below {faithfulness.MIN_SENTENCES} inputs there is no verdict.")

entry = current_checkpoint()
args = checkpoint_args(entry)
missing = glue.no_split(entry)
if missing is not None:
    st.info(missing)
    st.stop()
c1, c2, c3 = st.columns(3)
n = int(c1.number_input("Test inputs sampled", 1, 2000, glue.FAITHFULNESS_SAMPLE, step=50, key="faith-n"))
removal = c2.radio("Removed tokens", faithfulness.REMOVALS, horizontal=True, key="faith-removal",
                   format_func={"delete": "deleted", "unk": "as <unk>"}.get)
side = faithfulness.BOTH
if reads_pairs(entry):
    side = c3.radio("Side ranked and removed", [faithfulness.BOTH, *look_of(entry.kind).sentences], horizontal=True,
                    key="faith-side")
settings = glue.faithfulness_settings(removal=removal, side=side)
try:
    items = tuple(glue.test_items(*args, glue.data_stamp(entry), entry.config, n))
except (glue.DataError, ValueError, OSError) as e:
    st.error(f"The test split of {entry.task} cannot be read: {e}")
    st.stop()
few = items[:faithfulness.CASCADE_SENTENCES]

# The open tab is the session's (a key, a rerun on a switch): a button's rerun keeps the user on its tab, and
# only the open tab computes
erasure, interventions, randomisation = st.tabs(["Erasure", "Interventions", "Randomisation"], key="faith-tab",
                                                on_change="rerun")
if erasure.open:
    with erasure:
        summary = runner.run(faithfulness.Erasure(items, settings), args,
                             f"Erasing the top tokens of {entry.task} test inputs",
                             lambda part: erasure_drawing(part, entry.kind))
        draw(erasure_drawing(summary, entry.kind))
if interventions.open:
    with interventions:
        # a result kept on disk is drawn at once; otherwise it is computed when asked
        analysis = faithfulness.Interventions(items, settings)
        if st.button("Replace the attention", key="faith-intervene") or runner.known(analysis, args):
            draw(intervention_drawing(runner.run(analysis, args, f"Replacing the attention of {entry.task} test "
                                                                 "inputs", intervention_drawing)))
if randomisation.open:
    with randomisation:
        analysis = faithfulness.Cascade(few, settings)
        title = "Cascading model randomisation"
        if st.button(f"{title} ({len(few)} inputs)", key="faith-cascade") or runner.known(analysis, args):
            draw(agreement_drawing(runner.run(analysis, args, "Randomising the model from the top",
                                              lambda part: agreement_drawing(part, title)), title))
        st.session_state.setdefault("faith-shuffled", "")  # kept while another tab is open
        shuffled = persistent(st.text_input, "A model of the same settings trained on shuffled labels (its "
                              "checkpoint folder, e.g. runs/trec-shuffled-labels from `scripts/reproduce.sh "
                              "faithfulness`)", "faith-shuffled")
        if shuffled:
            try:
                other, digest = glue.compared_model(shuffled)
            except ValueError as e:
                st.error(str(e))
                st.stop()
            title = "Data randomisation: trained against shuffled labels"
            result = runner.run(faithfulness.DataRandomisation(few, settings, other, digest), args,
                                "Explaining both models", lambda part: agreement_drawing(part, title))
            draw(agreement_drawing(result, title))
