"""Faithfulness: is the attention an explanation of the prediction? Erasure (with the explanations' agreement),
interventions, randomisation and, for SST, plausibility against the human word labels, each against its null."""
import streamlit as st

from disan.app import analyses as glue
from disan.app import runner
from disan.app.models import checkpoint_args, current_checkpoint, reads_pairs
from disan.app.drawing import draw
from disan.app.widgets import number, persistent, setting, tabs
from disan.analyses import explainers, faithfulness, plausibility
from disan.render.faithfulness import agreement_drawing, erasure_drawing, intervention_drawing, plausibility_drawing
from disan.render.kinds import look_of

st.header("Faithfulness")
st.caption("A heatmap invites a reading: “the model looked at this word”. Here each explanation of the prediction "
           f"({', '.join(explainers.on_pages())}; per DiSA block where it reads one) is tested: removing "
           "its top tokens should move the output more than removing random ones (ERASER's comprehensiveness and "
           "sufficiency); replacing the attention should move it more than noise of the same size; and an "
           "explanation should change when the model it explains is destroyed. Plausibility, a different question "
           "(on the Stanford Sentiment Treebank, whose words humans labelled): do its top tokens include the words "
           "humans marked? An explanation can be plausible and unfaithful, or the reverse. Intervals are 95% bootstrap "
           f"intervals over inputs; below {faithfulness.MIN_SENTENCES} inputs there is no verdict.")

entry = current_checkpoint()
args = checkpoint_args(entry)
missing = glue.no_split(entry)
if missing is not None:
    st.info(missing)
    st.stop()
c1, c2, c3 = st.columns(3)
n = number(c1, "Test inputs sampled", "faith-n", 1, 2000, glue.FAITHFULNESS_SAMPLE, step=50)
removal = setting(c2.radio, "Removed tokens", "faith-removal", faithfulness.REMOVALS, horizontal=True,
                  format_func={"delete": "deleted", "unk": "as <unk>"}.get)
side = faithfulness.BOTH
if reads_pairs(entry):
    side = setting(c3.radio, "Side ranked and removed", "faith-side",
                   [faithfulness.BOTH, *look_of(entry.kind).sentences], horizontal=True)
settings = glue.faithfulness_settings(removal=removal, side=side)
if explainers.on_command_only():
    st.caption(f"Left to `disan faithfulness` for their cost (one input at a time): "
               f"{', '.join(explainers.on_command_only())}.")
try:
    items = tuple(glue.test_items(*args, glue.data_stamp(entry), entry.config, n))
except (glue.DataError, ValueError, OSError) as e:
    st.error(f"The test split of {entry.task} cannot be read: {e}")
    st.stop()
few = items[:faithfulness.CASCADE_SENTENCES]

# The open tab is the session's (a rerun on a switch): a button's rerun keeps the user on its tab, and only the
# open tab computes; plausibility needs human word labels, which only the Stanford Sentiment Treebank has
unlabelled = glue.no_word_labels(entry)
if unlabelled:
    st.caption(f"No Plausibility tab: {unlabelled}.")
panes = tabs(["Erasure", "Interventions", "Randomisation"] + ([] if unlabelled else ["Plausibility"]), "faith-tab")
erasure, interventions, randomisation = panes[:3]
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
if not unlabelled and panes[3].open:
    with panes[3]:
        try:
            labels = glue.word_labels(*args, entry.config, items)
        except (ValueError, OSError) as e:
            st.error(f"The human word labels of {entry.task}'s test inputs cannot be read: {e}")
            st.stop()
        result = runner.run(plausibility.Plausible(items, settings, labels), args,
                            f"Explaining {entry.task} test inputs against their human word labels",
                            plausibility_drawing)
        draw(plausibility_drawing(result))
