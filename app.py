"""DiSAN Explorer: ``streamlit run app.py``. Navigation and the sidebar shared by every page."""
import streamlit as st

from disan.app import early

if __name__ == "__main__":
    # before the imports below (2.5 s on a fresh server): the browser loads its plotly code meanwhile
    EARLY = early.start()

from disan.app import links  # noqa: E402
from disan.app.traces import SENTENCE_HELP  # noqa: E402
from disan.app.models import checkpoint_args, default_checkpoint, entries, model_version, reads_pairs, use_app_threads
from disan.app.widgets import persistent, start_url
from disan.render import markup  # noqa: E402
from disan.render.views import PRESET_PAIR, PRESET_SENTENCE  # noqa: E402

use_app_threads()  # at import: every trace of this server, whichever session asks


def pages() -> list:
    """The app's pages in the navigation's order. Made only in a script run: a training process started
    with multiprocessing's spawn imports this file as __mp_main__, where st.Page would warn of a missing
    ScriptRunContext in the server log.

    The folder is not named pages/: Streamlit takes a pages/ folder beside the script for its older
    multipage layout until the script calls st.navigation, so a shared link to a page, the first visit
    of a server just started, would run that page without this file (no sidebar, no model)."""
    return [
        st.Page("app_pages/attention.py", title="Attention", icon=":material/grid_on:", default=True),
        st.Page("app_pages/gates.py", title="Fusion gates", icon=":material/tune:"),
        st.Page("app_pages/source2token.py", title="Source2token", icon=":material/target:"),
        st.Page("app_pages/word_senses.py", title="Word senses", icon=":material/translate:"),
        st.Page("app_pages/training.py", title="Training", icon=":material/model_training:"),
        st.Page("app_pages/models.py", title="Models", icon=":material/inventory_2:"),
        st.Page("app_pages/corpus_senses.py", title="Corpus senses", icon=":material/scatter_plot:"),
        st.Page("app_pages/counterfactuals.py", title="Counterfactuals", icon=":material/compare_arrows:"),
        st.Page("app_pages/attribution.py", title="Attribution", icon=":material/insights:"),
        st.Page("app_pages/compare_models.py", title="Compare models", icon=":material/difference:"),
        st.Page("app_pages/case_study.py", title="Case study", icon=":material/fact_check:"),
        st.Page("app_pages/feature_atlas.py", title="Feature atlas", icon=":material/hub:"),
        st.Page("app_pages/faithfulness.py", title="Faithfulness", icon=":material/verified:"),
    ]


def follow_link(good, default: str) -> list[str]:
    """On a session's first run, take the model, the sentence and the page's settings from the URL
    (``?model=…&text=…``; see disan.app.links); the messages say what was not used and why, and whether the
    link's model has changed since the link was made."""
    if st.session_state.get("link-read"):
        return []
    st.session_state["link-read"] = True
    values, messages = links.read(st.query_params.to_dict(), {e.name: e.kind for e in good}, default)
    digest = values.pop(links.DIGEST, None)
    st.session_state.update(values)
    if digest is not None and "checkpoint" in values:  # a digest is the link's model's, not the default's
        entry = next(e for e in good if e.name == values["checkpoint"])
        messages += links.changed(entry.name, digest, model_version(*checkpoint_args(entry)))
    return messages


def sidebar() -> tuple[list[str], dict[str, str]]:
    """The model, its input and the download format; returns the messages about the link followed and the
    URL's parameters of the model and its input."""
    messages, params = [], {}
    with st.sidebar:
        st.title("DiSAN Explorer")
        all_entries = entries()
        good = [e for e in all_entries if e.ok]
        broken = [e for e in all_entries if not e.ok]
        if good:
            names = [e.name for e in good]
            default = default_checkpoint(good)
            messages = follow_link(good, default)
            if st.session_state.get("checkpoint") not in names:
                st.session_state["checkpoint"] = default
            labels = {e.name: e.short_label for e in good}
            entry = next(e for e in good if e.name == st.session_state["checkpoint"])
            persistent(st.selectbox, "Model", "checkpoint", options=names, format_func=labels.get,
                       help=f"{entry.label}. Vocabulary: {entry.vocabulary}. Every checkpoint's card is on the "
                            "Models page.")
            entry = next(e for e in good if e.name == st.session_state["checkpoint"])
            missing = entry.vectors_missing  # a property that looks for the vectors' files: asked once a run
            if missing:  # its words outside the stored ones are <unk> here, unlike where they are
                st.caption(f":material/warning: {missing}")
            if reads_pairs(entry):
                st.session_state.setdefault("premise", PRESET_PAIR[0])
                st.session_state.setdefault("hypothesis", PRESET_PAIR[1])
                persistent(st.text_area, "Premise", "premise", height=80)
                persistent(st.text_area, "Hypothesis", "hypothesis", height=80)
            else:
                st.session_state.setdefault("text", PRESET_SENTENCE)
                persistent(st.text_area, "Sentence", "text", height=100, help=SENTENCE_HELP)
            # the URL follows the model and the input, so that it can be shared (see start_url)
            digest = model_version(*checkpoint_args(entry))
            params = links.write(entry.name, entry.kind, st.session_state, digest=digest)
        else:
            st.info("No checkpoint yet. Train one on the Training page or with "
                    "`python -m disan train --task trec --out checkpoints/trec`.")
        st.session_state.setdefault("figure_format", "png")
        persistent(st.radio, "Figure downloads", "figure_format", options=["png", "svg"], horizontal=True,
                   help="the format of plotly's camera button on every figure")
        if broken:
            with st.expander(f"{len(broken)} broken checkpoint(s)"):
                for e in broken:
                    st.text(f"{e.name}: {e.error}")
    return messages, params


# The browser tab's icon: an emoji, which Streamlit draws as an inline SVG. A page's ":material/…:" icon would
# be fetched from an external font host as the tab icon (the sidebar's icons come from the server's own font).
FAVICON = "🔎"

# Streamlit runs this file as __main__; a training process started with multiprocessing's spawn imports
# it as __mp_main__ and must not draw anything.
if __name__ == "__main__":
    # the icon before the navigation: the browser takes a page's own icon as the tab's when none is set yet
    st.set_page_config(page_icon=FAVICON)
    link_messages, link_params = sidebar()
    # every page listed: past twelve pages Streamlit folds the menu behind "View N more" by default
    page = st.navigation(pages(), expanded=True)
    start_url(link_params, page.url_path)
    st.set_page_config(page_title=f"{page.title} · DiSAN Explorer", layout="wide")
    for message in link_messages:
        st.warning(markup.markdown_label(message))
    page.run()
    # not reached when the page stops early (st.stop): the session's next run leaves the hidden figure out
    early.finish(EARLY)
