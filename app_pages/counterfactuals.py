"""Edit the sentence, drop each token, or forbid attention edges, and see what changes."""
import streamlit as st

from disan.app.drawing import draw
from disan.app.opening import open_input
from disan.app.widgets import kept, persistent, setting, tabs, token_window
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
    which = ["premise", "hypothesis"].index(setting(st.radio, "Sentence to change", "cf-sentence",
                                                    ["premise", "hypothesis"], horizontal=True))
sentence = sentences[which]
tokens = sentence.tokens
occluded = cf.occlusion(pipe, sentences, which)
# by default the edit and the knockout act on the token whose removal changes the prediction most
important = int(occluded.position[0]) if len(occluded) else 0


@st.fragment
def edit_part() -> None:
    """Delete, replace or mask one token; the widgets here redraw this part only."""
    c1, c2, c3 = st.columns(3)
    op = setting(c1.radio, "Edit", "cf-op", cf.EDITS, default="delete" if len(tokens) > 1 else "mask",
                 horizontal=True)
    kept("cf-position", tokens, important)  # a new sentence starts at its most important token
    position = persistent(c2.selectbox, "Token", "cf-position", options=range(len(tokens)),
                          format_func=lambda j: views.token_label(tokens, j))
    replacement = persistent(c3.text_input, "Replace with", "cf-replacement", default="", disabled=op != "replace")
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
    kept("cf-blocks", names, names)
    blocks = persistent(st.multiselect, "Blocks", "cf-blocks", options=names)
    c1, c2 = st.columns(2)
    kept("cf-keys", tokens, [important])  # a new sentence starts again from its most important token
    kept("cf-queries", tokens, [])
    keys = persistent(c1.multiselect, "Attended tokens i (the keys whose edges are removed)", "cf-keys",
                      options=range(len(tokens)), format_func=lambda j: views.token_label(tokens, j))
    queries = persistent(c2.multiselect, "Query tokens j (none: every query)", "cf-queries",
                         options=range(len(tokens)), format_func=lambda j: views.token_label(tokens, j))
    try:
        knocked = cf.knockout(pipe, sentences, which, blocks, keys, queries)
    except ValueError as e:
        st.info(str(e))
        return
    window = token_window(st, tokens, min(keys), "cf-knockout-window")  # around the first key knocked out
    draw(cf_render.knockout_drawing(pipe.kind, knocked, blocks, window))


edit_tab, occlusion_tab, knockout_tab = tabs(["Edit a token", "Occlusion", "Attention knockout"], "cf-tab")
with edit_tab:
    edit_part()
with occlusion_tab:
    if len(occluded):
        draw(cf_render.occlusion_drawing(pipe.kind, tokens, occluded))
    else:
        st.info("A one-token sentence has no token to drop.")
with knockout_tab:
    knockout_part()
