"""One word over a whole corpus: its vector at every occurrence, projected with PCA and clustered."""
import streamlit as st

from disan.app import analyses as glue
from disan.app import runner
from disan.app.models import checkpoint_args, current_checkpoint
from disan.app.drawing import draw
from disan.app.traces import open_in_attention
from disan.app.widgets import kept, number, persistent, setting
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
kept("corpus-word", words, words[0] if words else None)  # another corpus starts at its most frequent word
word = persistent(c1.selectbox, "Word", "corpus-word", options=words, accept_new_options=True,
                  help="the corpus's most frequent content words first; type any other word")
kind = setting(c2.radio, "Vector", "corpus-kind", kinds, format_func=senses.VECTORS.get)
c1, c2 = st.columns(2)
picked = setting(c1.radio, "Clusters", "corpus-k-mode", ["k by silhouette", "chosen k"], horizontal=True)
k = number(c2, "k", "corpus-k", 2, 10, corpus.CLUSTERS) if picked == "chosen k" else None
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
    colour = setting(st.radio, "Colour by", "corpus-colour", ["cluster", "label"], horizontal=True,
                     disabled=not labelled)
    kept("corpus-selected", (chosen.name, result.word, len(table)), 0)  # another word starts at its first occurrence
    selected = persistent(st.selectbox, "Occurrence", "corpus-selected", options=range(len(table)),
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
