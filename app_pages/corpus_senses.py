"""One word over a whole corpus: its vector at every occurrence, projected with PCA and clustered."""
import streamlit as st

from disan.app import analyses as glue
from disan.app import runner
from disan.app.models import checkpoint_args, current_checkpoint
from disan.app.drawing import draw
from disan.app.traces import open_in_attention
from disan.analyses import corpus, stats
from disan.inspect import senses
from disan.render import corpus as corpus_render

st.header("Corpus senses")
st.caption("Does DiSAN separate a word's senses across a corpus, beyond the paper's two sentences (Fig. 6)? "
           "Each point is one occurrence of the word; hover to read its context.")

entry = current_checkpoint()
kinds = glue.encoder_parts(entry)["vectors"]
if not kinds:
    st.info(f"The {entry.encoder} encoder has no per-token attention vectors.")
    st.stop()
chosen = glue.pick_corpus(entry, "corpus")
if chosen is None:
    st.stop()
if chosen.skipped:
    st.caption(f"{chosen.skipped} empty or over-long line{' was' if chosen.skipped == 1 else 's were'} left out.")
words = glue.frequent_words(chosen)
c1, c2 = st.columns(2)
word = c1.selectbox("Word", words, key="corpus-word", accept_new_options=True,
                    help="the corpus's most frequent content words first; type any other word")
kind = c2.radio("Vector", kinds, format_func=senses.VECTORS.get, key="corpus-kind")
c1, c2 = st.columns(2)
picked = c1.radio("Clusters", ["k by silhouette", "chosen k"], horizontal=True, key="corpus-k-mode")
k = int(c2.number_input("k", 2, 10, corpus.CLUSTERS, key="corpus-k")) if picked == "chosen k" else None
if not word:
    st.stop()
# a stage takes the word's first occurrences in corpus order; the search for k by silhouette waits for all
try:
    result = runner.run(corpus.SensesAnalysis(chosen, word, kind, k), checkpoint_args(entry),
                        f"Collecting “{word}” in {chosen.name}", corpus_render.drawing)
except ValueError as e:
    st.info(str(e))
    st.stop()
st.caption(f"{len(result.table)} occurrences (at most {corpus.MAX_OCCURRENCES}); {result.k} clusters (k-means++, "
           f"the lowest inertia of {stats.RESTARTS} runs); PC 1 and PC 2 explain {result.explained[0]:.1%} "
           f"and {result.explained[1]:.1%} of the variance of the unit-length vectors, each component signed so that "
           "its largest loading is positive.")


@st.fragment
def points(result: corpus.Senses, chosen: corpus.Corpus) -> None:
    """Colouring and picking an occurrence redraw this part only; the vectors are not fetched again."""
    table = result.table
    labelled = any(chosen.labels)
    colour = st.radio("Colour by", ["cluster", "label"], horizontal=True, key="corpus-colour", disabled=not labelled)
    selected = st.selectbox("Occurrence", range(len(table)), key="corpus-selected",
                            format_func=lambda i: f"#{i} · cluster {table.cluster[i]} · {table.context[i][:90]}")
    draw(corpus_render.drawing(result, colour if labelled else "cluster", selected,
                               corpus.neighbours(result, selected)))
    c1, c2 = st.columns(2)
    if c1.button("Open in the Attention page", key="corpus-open"):
        s = int(table.sentence[selected])
        open_in_attention(entry.name, entry.kind, chosen.texts[s], chosen.pairs[s])
    c2.download_button("Occurrences as CSV", corpus.export_csv(result), f"corpus-senses-{result.word}.csv",
                       "text/csv", key="corpus-csv")


points(result, chosen)
