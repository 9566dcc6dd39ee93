"""Feature atlas: what each attention feature of each DiSA block does, measured over a corpus."""
import streamlit as st

from disan.app import analyses as glue
from disan.app import links, runner
from disan.app.models import checkpoint_args, current_checkpoint, entry_pipeline
from disan.app.drawing import EXPANDED_PX, draw, table
from disan.app.widgets import number, persistent, setting
from disan.analyses import atlas
from disan.analyses import corpus
from disan.render import atlas as atlas_render

st.header("Feature atlas")
st.caption("Every feature k of a DiSA block has its own attention distribution. Do different features capture "
           "different kinds of dependency? Each feature is measured over every query of a corpus, against what "
           "uniform attention under the same mask gives; hover a dot to read what it does.")

entry = current_checkpoint()
if not glue.encoder_parts(entry)["blocks"]:
    st.info(f"The {entry.encoder} encoder has no DiSA blocks, so no attention features to map.")
    st.stop()
chosen = glue.pick_corpus(entry, "atlas")
if chosen is None:
    st.stop()
c1, c2, c3 = st.columns(3)
size = number(c1, "Sentences", "atlas-n", 10, corpus.MAX_UPLOAD, corpus.SAMPLE_SENTENCES, step=100,
              help="a seeded random sample of the corpus when it is larger")
picked = setting(c2.radio, "Types", "atlas-k-mode", ["k by silhouette", "chosen k"], horizontal=True)
k = number(c3, "k", "atlas-k", 2, 12, atlas.TYPES) if picked == "chosen k" else None
sample = corpus.sample(chosen, size)
if not len(sample):
    st.info(f"{chosen.name} has no sentence to measure.")
    st.stop()
args = checkpoint_args(entry)
analysis = atlas.AtlasAnalysis(sample)


def typed(found: atlas.Atlas) -> atlas.Atlas:
    """An atlas with the chosen k's types (k by silhouette, or a stage's :data:`~disan.analyses.atlas.TYPES`,
    where none is chosen): typing again traces nothing."""
    return found if k is None else atlas.assign_types(found, k)


def drawing(found: atlas.Atlas, colour: str = "type", selected: int | None = None):
    """The map and the tallies of an atlas's types (``selected``: a table row to ring)."""
    return atlas_render.drawing(found, atlas.overview(found), colour, selected)


result = typed(runner.run(analysis, args, f"Measuring every feature over {sample.name}",
                          lambda part: drawing(typed(part))))
st.caption(f"{len(sample)} sentences, {int(result.lengths.sum())} tokens, {len(result.table)} features "
           f"({len(result.blocks)} blocks × {result.d}); measured in {result.seconds:.1f} s. {result.k} types; "
           f"PC 1 and PC 2 explain {result.explained[0]:.1%} and {result.explained[1]:.1%} of the variance.")


@st.fragment
def features(result: atlas.Atlas, sample: corpus.Corpus) -> None:
    """Colouring, searching and picking a feature redraw this part only; the profiles are not measured again."""
    colour = setting(st.radio, "Colour the map by", "atlas-colour", atlas_render.COLOURS, horizontal=True)
    c1, c2, c3 = st.columns([1, 2, 3])
    block = setting(c1.selectbox, "Block", "atlas-block", result.blocks)
    measures = glue.atlas_measures(result)
    order_by = setting(c2.selectbox, "Sort features by", "atlas-sort", measures, default="entropy ÷ uniform",
                       help="lowest first")
    rows = glue.block_features(result, block, order_by)
    feature = int(setting(c3.selectbox, "Feature", "atlas-feature", rows["feature"],
                          format_func=lambda f: f"k = {f} · {result.row(block, f)['summary']}"))
    draw(drawing(result, colour, result.position(block, feature)))
    st.download_button("The table as CSV", atlas.export_csv(result), f"feature-atlas-{entry.name}.csv", "text/csv",
                       key="atlas-csv")
    with st.expander("The table: one row per block and feature"):
        # what tells the features apart and the measure they are sorted by; the others in the toolbar's
        # column menu and the CSV above
        table(st, rows, EXPANDED_PX, ["block", "feature", "kind", order_by, "summary"])

    st.subheader("Search")
    query = persistent(st.text_input, "Features that attend most to a word or a word class", "atlas-search",
                       default="negations",
                       help=f"words separated by spaces or commas (pooled), or a class: {', '.join(atlas.CLASSES)}")
    if query.strip():
        try:
            found = atlas.search(result, query)
            # the type in the toolbar's column menu: beside the summary it leaves each no room
            table(st, found, columns=[c for c in found.columns if c != "type"], key="atlas-search-table")
        except ValueError as e:
            st.info(str(e))

    st.subheader(f"One feature: {block}, k = {feature}")
    # its sharpest sentences are traced by the model, loaded for them only when the explanation is not kept
    explained = runner.kept(runner.derived_key(runner.key(analysis, args[0]), "feature explained", k=k, block=block,
                                               feature=feature),
                            lambda: atlas.explanation(entry_pipeline(entry), result, sample.texts, block, feature))
    draw(atlas_render.explained(explained))
    if explained.sentences:
        s = explained.sentences[0]
        st.link_button("Open the sharpest sentence in the Attention page, one feature = k",
                       links.attention_url(entry.name, entry.kind, sample.texts[s], sample.pairs[s], feature))


features(result, sample)
