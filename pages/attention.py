"""Token2token attention of both DiSA blocks (the paper's Fig. 4), per feature or reduced."""
import streamlit as st

from disan.app.common import (
    downloads,
    draw,
    drawing_width,
    fresh,
    page_sentences,
    side_by_side,
)
from disan.explore import markup, views

st.header("Token2token attention")
st.caption("Rows: the query token j. Columns: the attended token i. Grey cells are masked "
           "(forward: j attends only to earlier tokens; backward: only to later ones).")


def recentre(role: str) -> None:
    """A new query token moves the token window around it (the window slider starts again from its default)."""
    st.session_state.pop(f"attention-window-{role}", None)


sentences = page_sentences(views.VIEWS["attention"])
trace = sentences[0][1].trace
c1, c2, c3 = st.columns([3, 2, 2])
mode = c1.radio("Features", views.MODES, horizontal=True, key="attention-mode",
                help="Each of the d_h features has its own attention distribution.")
scale = c2.radio("Colour by", views.SCALES, horizontal=True, key="attention-scale",
                 format_func={"lift": "lift over uniform", "probability": "probability"}.get,
                 help="Lift: P × the number of tokens the query row may attend, so 1 is uniform attention.")
shades = views.shade_choices(trace)
shade = c3.selectbox("Shade the sentence by", list(shades), format_func=shades.get, key="attention-shade")
feature = rank_by = None
if mode == "one feature":
    feature = int(st.number_input("Feature k", 0, views.feature_count(trace) - 1, 0, key="attention-k"))
elif mode == "sharpest features":
    rank_by = st.radio("Rank by the entropy of", views.block_names(trace), horizontal=True, key="attention-rank")
pair = len(sentences) > 1
for role, sentence, where in side_by_side(sentences):
    tokens, n = sentence.tokens, len(sentence.tokens)
    for key in (f"attention-query-{role}", f"attention-window-{role}"):
        fresh(key, tokens)  # a new sentence starts from the default query and window
    labels = markup.token_labels(tokens)
    query = where.pills("Query token j: click a token", range(n), default=views.default_query(n),
                        required=True, key=f"attention-query-{role}", format_func=labels.__getitem__,
                        on_change=recentre, args=(role,))
    window = None
    if n > views.WINDOW:
        start, stop = views.default_window(n, query)
        first, last = where.slider("Tokens shown in the heatmaps", 0, n - 1, (start, stop - 1),
                                   key=f"attention-window-{role}",
                                   help=f"Sentences over {views.WINDOW} tokens are shown a window at a time.")
        window = (first, last + 1)  # the slider's ends are tokens; a window's stop is past its last token
    if mode == "sharpest features":
        feature = where.selectbox(
            "Feature (sharpest first)", views.sharpest_features(sentence.trace, rank_by),
            key=f"attention-ranked-{role}",
            format_func=lambda k, tr=sentence.trace: views.feature_label(tr, rank_by, k))
    options = views.AttentionOptions(mode, feature, rank_by, query, scale, window, shade)
    draw(views.attention(sentence, options, drawing_width(sentences)), where, prefix=f"{role}-" if pair else "")
    downloads(sentence, f"attention-{role}", where)
