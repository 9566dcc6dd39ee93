"""Token2token attention of both DiSA blocks (the paper's Fig. 4), per feature or reduced.

Every setting lives in the session (:func:`persistent`), so it is the same when the user comes back from
another page; the query token, the window and the feature depend on the sentence and start again from
their defaults on a new one (:func:`kept`). The widgets are drawn from those values, so the token
highlighted is always the query the figures draw.
"""
import streamlit as st

from disan.app.drawing import downloads
from disan.app.opening import ReadingRoom, drawing_width, page_sentences, report_download, side_by_side
from disan.app.widgets import kept, persistent, setting, token_window
from disan.analyses import explainers
from disan.render import markup, views

st.header("Token2token attention")
st.caption("Rows: the query token j. Columns: the attended token i. Grey cells are masked "
           "(forward: j attends only to earlier tokens; backward: only to later ones).")

sentences = page_sentences(views.VIEWS["attention"])
trace = sentences[0][1].trace
c1, c2, c3 = st.columns([3, 2, 2])
mode = setting(c1.radio, "Features", "attention-mode", views.MODES, horizontal=True,
               help="Each of the d_h features has its own attention distribution.")
scale = setting(c2.radio, "Colour by", "attention-scale", views.SCALES, horizontal=True,
                format_func={"lift": "lift over uniform", "probability": "probability"}.get,
                help="Lift: P × the number of tokens the query row may attend, so 1 is uniform attention.")
shades = views.shade_choices(trace)
shade = setting(c3.selectbox, "Shade the sentence by", "attention-shade", shades, format_func=shades.get)
rank_by = None
if mode in ("one feature", "sharpest features"):
    rank_by = setting(st.radio, "Rank features by the entropy of", "attention-rank", views.block_names(trace),
                      horizontal=True, help="Lower entropy: attention concentrated on fewer tokens.")
# a link's feature (``&feature=k``, see disan.app.links): the one feature every side starts at, once
linked = st.session_state.pop("attention-k", None)
pair = len(sentences) > 1
# each block's heatmap ranks the tokens by the attention they receive (the registry's attention lift, the mean
# over features whatever feature the heatmap shows): tested on this input once the figures are drawn
room = ReadingRoom(sentences, (explainers.ATTENTION_LIFT,), views.VIEWS["attention"].ranked)
for role, sentence, where in side_by_side(sentences):
    tokens, n, tr = sentence.tokens, len(sentence.tokens), sentence.trace
    labels = markup.token_labels(tokens)
    key = f"attention-query-{role}"
    kept(key, tokens, views.default_query(n))  # a new sentence starts at its middle token
    # wrap: in a pair's column the tokens would otherwise scroll sideways, hiding the highlighted one
    query = persistent(where.pills, "Query token j: click a token", key, options=range(n), required=True,
                       format_func=labels.__getitem__, wrap=True)
    window = token_window(where, tokens, query, f"attention-window-{role}")
    feature = None
    if mode == "one feature":
        # every feature, the sharpest for this query first; the mode starts at the first, and the feature
        # the user picks stays when another query token is clicked
        choices = views.feature_choices(tr, rank_by, query)
        key = f"attention-k-{role}"
        kept(key, (tokens, rank_by), choices[0])
        if linked in choices:
            st.session_state[key] = linked
        elif linked is not None:
            where.warning(f"This model has features 0 to {len(choices) - 1}; showing the sharpest.")
        feature = persistent(where.selectbox, "Feature k (sharpest first)", key, options=choices,
                             format_func=lambda k, tr=tr, j=query: views.feature_label(tr, rank_by, k, j))
    elif mode == "sharpest features":
        choices = views.sharpest_features(tr, rank_by)
        key = f"attention-ranked-{role}"
        kept(key, (tokens, rank_by), choices[0])
        feature = persistent(where.selectbox, "Feature ▶ shown in the sentence and the comparison (sharpest first)",
                             key, options=choices,
                             format_func=lambda k, tr=tr: views.feature_label(tr, rank_by, k))
    options = views.AttentionOptions(mode, feature, rank_by, query, scale, window, shade)
    room.draw(views.attention(sentence, options, drawing_width(sentences)), where, f"{role}-" if pair else "")
    downloads(sentence, f"attention-{role}", where, role)
report_download()
room.show()
