"""Gradient attribution beside attention: does what DiSAN attends to agree with what the prediction depends on?"""
import streamlit as st

from disan.app import analyses as glue
from disan.app import runner
from disan.app.models import checkpoint_args
from disan.app.drawing import draw
from disan.app.widgets import number
from disan.app.opening import open_input, report_download, show_reading
from disan.analyses import attribution
from disan.render.attribution import corpus_drawing, drawing

st.header("Attribution")
st.caption("Integrated gradients (50 steps from zero word vectors) and gradient × input of the predicted class, "
           "beside each token's source2token importance and the attention it receives (÷ what uniform attention "
           "would give), with Kendall's τ between each attribution and each of them, the evidence against the "
           "prediction ranked last (the “attention is not explanation” question: Jain & Wallace 2019; Wiegreffe & "
           "Pinter 2019).")

entry, pipe, text, result = open_input()
args = checkpoint_args(entry)
attr = glue.attribute(*args, text, result.sentences)
st.caption(f"Completeness: f(x) = {attr.value:.4f}, f(baseline) = {attr.baseline:.4f}; the integrated gradients "
           f"sum to within {abs(attr.completeness_gap):.2%} of the difference.")
draw(drawing(attribution.explained(attr, result.sentences), entry.kind))
report_download()
show_reading(st, (*attribution.METHODS, *attribution.ATTENTION))  # each column of the heatmap, tested on this input

st.subheader("Agreement over a corpus")
st.caption(f"Integrated gradients over {attribution.CORPUS_STEPS} steps for each input (their completeness gap is "
           "shown with the histograms).")
missing = glue.no_split(entry)
if missing is not None:
    st.info(missing)
    st.stop()
n = number(st, "Test sentences sampled", "attr-sample", 200, 2000, 200, step=100)
try:
    items = glue.test_items(*args, glue.data_stamp(entry), entry.config, n)
except glue.DataError as e:  # the file the model was trained on is gone or has changed
    st.error(f"The test split of {entry.task} cannot be read: {e}")
    st.stop()
agreement = runner.run(attribution.AttentionAgreement(tuple(items)), args, f"Attributing test inputs of {entry.task}",
                       corpus_drawing)
if len(agreement.frame):
    draw(corpus_drawing(agreement))
else:
    st.info("No input of the sample could be traced.")
