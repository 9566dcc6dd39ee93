"""The paper's case-study claims (its Fig. 4 and 5), measured over a corpus with bootstrap intervals."""
import streamlit as st

from disan.app import analyses as glue
from disan.app import runner
from disan.app.models import checkpoint_args, current_checkpoint
from disan.app.drawing import draw
from disan.app.widgets import number
from disan.render import casestudy as case_render
from disan.render import views
from disan.analyses import casestudy, corpus

st.header("Case study")
st.caption("The paper reads two sentences: stop words get little attention, a few words get large attention from "
           "all others, the fusion gate is smaller for stop words, and the two directions attend to different "
           "words. Here each claim is measured over a corpus, with 95% intervals from resampling sentences, and "
           "judged against a null: what a model without the claimed property gives under the same masks and "
           f"sentence lengths. One that beats its null by less than {casestudy.SMALL:.0%} of the level it is "
           f"compared with is marked small; below {casestudy.MIN_SENTENCES} sentences there is no verdict.")

entry = current_checkpoint()
args = checkpoint_args(entry)
try:
    paper, paper_found = glue.paper_sentences(*args)
except ValueError as e:  # an encoder without DiSA blocks
    st.info(f"The {entry.encoder} encoder cannot be studied: {e}.")
    st.stop()
chosen = glue.pick_corpus(entry, "case")
if chosen is None:
    draw(views.Drawing(case_render.paper_rows(paper, paper_found)))
    st.stop()
n = number(st, "Sentences (a seeded random sample of the corpus)", "case-n", 1, corpus.SAMPLE_SENTENCES,
           min(corpus.SAMPLE_SENTENCES, len(chosen)), step=100)
sampled = corpus.sample(chosen, n)
analysis = casestudy.Study(sampled)
study = runner.run(analysis, args, f"Tracing and measuring sentences of {chosen.name}",
                   lambda part: case_render.drawing(casestudy.findings(part)))
st.caption(f"Measured in {study.seconds:.1f} s (computed once per checkpoint, corpus and version of the code, "
           "then kept on disk).")
# the claims' bootstrap intervals and null shuffles take seconds: they are kept with the measures
draw(case_render.drawing(glue.findings(analysis, args[0], study), paper, paper_found))
