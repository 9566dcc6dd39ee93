"""Edit the sentence, drop each token, or forbid attention edges, and see what changes."""
import streamlit as st

from disan.app.drawing import draw
from disan.app.opening import open_input
from disan.app.widgets import token_window
from disan.render import counterfactual as cf_render
from disan.render import views
from disan.analyses import counterfactual as cf

st.header("Counterfactuals")
st.caption("What the prediction and the attention do when a token is deleted, replaced or masked (the unknown "
           "word <unk>), when each token is dropped in turn, or when attention edges are knocked out.")

entry, pipe, _, result = open_input()
sentences = result.sentences
which = 0
if pipe.is_pair:
    which = ["premise", "hypothesis"].index(st.radio("Sentence to change", ["premise", "hypothesis"],
                                                     horizontal=True, key="cf-sentence"))
sentence = sentences[which]
tokens = sentence.tokens
occluded = cf.occlusion(pipe, sentences, which)
# by default the edit and the knockout act on the token whose removal changes the prediction most
important = int(occluded.position[0]) if len(occluded) else 0


@st.fragment
def edit_part() -> None:
    """Delete, replace or mask one token; the widgets here redraw this part only."""
    c1, c2, c3 = st.columns(3)
    op = c1.radio("Edit", cf.EDITS, horizontal=True, key="cf-op",
                  index=cf.EDITS.index("delete" if len(tokens) > 1 else "mask"))
    position = c2.selectbox("Token", range(len(tokens)), index=important, key="cf-position",
                            format_func=lambda j: views.token_label(tokens, j))
    replacement = c3.text_input("Replace with", "", key="cf-replacement", disabled=op != "replace")
    try:
        edited = cf.edit(tokens, op, position, replacement)
    except ValueError as e:
        st.info(str(e))
        return
    st.text("After: " + " ".join(edited))
    window = token_window(st, tokens, position, "cf-edit-window")  # around the edited token
    draw(cf_render.edit_drawing(pipe.kind, cf.compare_edit(pipe, sentences, which, edited), window))


@st.fragment
def knockout_part() -> None:
    """Forbid attention edges in the chosen blocks; the widgets here redraw this part only."""
    names = views.block_names(sentence.trace)
    if not names:
        st.info(f"The {entry.encoder} encoder has no token2token attention to knock out.")
        return
    blocks = st.multiselect("Blocks", names, default=names, key="cf-blocks")
    c1, c2 = st.columns(2)
    keys = c1.multiselect("Attended tokens i (the keys whose edges are removed)", range(len(tokens)),
                          default=[important], key="cf-keys", format_func=lambda j: views.token_label(tokens, j))
    queries = c2.multiselect("Query tokens j (none: every query)", range(len(tokens)), key="cf-queries",
                             format_func=lambda j: views.token_label(tokens, j))
    try:
        knocked = cf.knockout(pipe, sentences, which, blocks, keys, queries)
    except ValueError as e:
        st.info(str(e))
        return
    window = token_window(st, tokens, min(keys), "cf-knockout-window")  # around the first key knocked out
    draw(cf_render.knockout_drawing(pipe.kind, knocked, blocks, window))


edit_tab, occlusion_tab, knockout_tab = st.tabs(["Edit a token", "Occlusion", "Attention knockout"])
with edit_tab:
    edit_part()
with occlusion_tab:
    if len(occluded):
        draw(cf_render.occlusion_drawing(pipe.kind, tokens, occluded))
    else:
        st.info("A one-token sentence has no token to drop.")
with knockout_tab:
    knockout_part()
