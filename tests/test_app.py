"""Every page of the app through Streamlit's AppTest, on tiny checkpoints made by the tests."""
import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest
import tomllib
from streamlit.testing.v1 import AppTest

import disan
from disan.app import links, traces
from disan.app.drawing import PAGE_PX, layout, share
from disan.data.text import MAX_TOKENS, check_text
from disan.store import diskcache
from disan.render import views
from disan.inspect import senses
from disan.nn import checkpoint

from .test_figures import json_strings

APP = str(Path(__file__).resolve().parent.parent / "app.py")
SHIPPED = Path(APP).parent / "checkpoints"
PAGES = ["app_pages/attention.py", "app_pages/gates.py", "app_pages/source2token.py", "app_pages/word_senses.py", "app_pages/models.py"]


@pytest.fixture
def checkpoints(tmp_path, monkeypatch, make_checkpoint):
    make_checkpoint("classify", name="a-sentiment")
    make_checkpoint("pair", name="b-entailment")
    broken = tmp_path / "c-broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"format": "disan-checkpoint", "version": 0}')
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    return tmp_path


def app(**state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception
    return at


def visit(at: AppTest, page: str) -> AppTest:
    at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def charts(at: AppTest) -> dict:
    """The page's figures by key, without the prediction chart drawn above every trace page."""
    return {c.key: c for c in at.get("plotly_chart") if c.key != "prediction-probs"}


def title(at: AppTest, key: str) -> str:
    """The title of the figure drawn under ``key``, parsed from its spec (plotly may escape non-ASCII text there)."""
    return json.loads(charts(at)[key].proto.spec)["layout"]["title"]["text"]


def texts(elements) -> str:
    """The elements' text as the browser shows it: Markdown's backslash escapes removed."""
    return " ".join(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", str(e.value)) for e in elements)


def test_without_checkpoints_every_page_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path / "none"))
    at = app()
    assert "No checkpoint yet" in texts(at.sidebar.info)
    for page in PAGES[:-1]:
        assert "No model is selected" in texts(visit(at, page).info)


def test_every_page_draws_for_a_sentence_model(checkpoints):
    at = app()
    assert at.session_state["checkpoint"] == "a-sentiment"
    assert "c-broken" in texts(at.sidebar.expander[0].text) and "version 0" in texts(at.sidebar.expander[0].text)
    at.sidebar.text_area[0].input("The glass bottle is big").run()
    # the Attention page's last section compares the blocks token by token: a chart, never an empty note
    expected = {"app_pages/attention.py": 5, "app_pages/gates.py": 3, "app_pages/source2token.py": 2,
                "app_pages/word_senses.py": 1, "app_pages/models.py": 0}
    for page, count in expected.items():
        visit(at, page)
        assert len(charts(at)) == count, page
        assert at.session_state["text"] == "The glass bottle is big"  # the sentence follows the user across pages
    visit(at, "app_pages/attention.py")
    assert at.metric[0].value in ("negative", "positive", "neutral")


def test_the_app_checks_each_checkpoint_once_and_reads_the_weights_of_the_chosen_one_only(checkpoints, monkeypatch):
    checked, read = [], []
    real_check, real_read = checkpoint.check, checkpoint.read_weights
    monkeypatch.setattr(checkpoint, "check", lambda path: checked.append(path.name) or real_check(path))
    monkeypatch.setattr(checkpoint, "read_weights", lambda path: read.append(path.parent.name) or real_read(path))
    at = app()
    assert sorted(checked) == ["a-sentiment", "b-entailment", "c-broken"] and read == ["a-sentiment"]
    at.sidebar.text_area[0].input("The glass bottle is big").run()
    for page in PAGES:
        visit(at, page)
    assert len(checked) == 3 and read == ["a-sentiment"]  # reruns and pages list and load nothing again


def test_feature_and_token_controls(checkpoints):
    at = visit(app(), "app_pages/attention.py")
    at.radio(key="_attention-mode").set_value("one feature").run()
    picker = at.selectbox(key="_attention-k-sentence")
    assert all(label.startswith("k = ") and "nats at query 4" in label for label in picker.options)
    picker.set_value(3).run()
    assert not at.exception and len(charts(at)) == 5
    # forward and backward never attend the same cell: the last section compares them token by token
    assert "feature k = 3" in title(at, "attention-blocks") and not at.info
    at.radio(key="_attention-mode").set_value("sharpest features").run()
    ranked = at.selectbox(key="_attention-ranked-sentence").options
    assert len(ranked) == 5 and all(label.startswith("k = ") and "mean entropy" in label for label in ranked)
    at.pills(key="_attention-query-sentence").set_value(0).run()
    assert not at.exception and "attention-query-forward" not in charts(at)
    assert "query 0 “\u2068Families\u2069” attends to no token: it has no earlier token" in texts(at.info)


def query_entropy(block, j: int) -> np.ndarray:
    """(d,) entropy of query j's attention in each feature, over the tokens it may attend, in float64."""
    p = np.asarray(block.probs, dtype=float)[j][np.asarray(block.mask)[j]]  # (keys, d)
    return -(p * np.log(np.where(p > 0, p, 1))).sum(axis=0)


def test_one_feature_mode_starts_at_the_sharpest_feature_of_the_query(monkeypatch):
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(SHIPPED))
    text = "Although the plot is thin , the cast is warm ."
    trace = disan.load(SHIPPED / "sst5").trace_sentence(text).trace
    at = app(checkpoint="sst5", text=text)
    at.radio(key="_attention-mode").set_value("one feature").run()
    for j in (5, 8):  # the middle token (of 11), then a click on the second "is"
        entropy = query_entropy(trace.blocks[0], j)
        picker = at.selectbox(key="_attention-k-sentence")
        features = [int(label.split()[2]) for label in picker.options]  # "k = 12 · entropy 0.53 nats at query 5"
        assert sorted(features) == list(range(len(entropy))) and all(f"at query {j}" in o for o in picker.options)
        assert (np.diff(entropy[features]) > -1e-5).all()  # sharpest first
        if j == 5:  # the mode starts at the query's sharpest feature
            first = features[0]
            assert entropy[first] == pytest.approx(entropy.min(), abs=1e-5)
        assert picker.value == first and f"feature k = {first}" in title(at, "attention-pair")  # then it stays
        at.pills(key="_attention-query-sentence").set_value(8).run()


def test_the_default_query_is_the_middle_token_and_a_click_on_a_token_picks_another(checkpoints):
    at = visit(app(text="the glass bottle is big"), "app_pages/attention.py")
    query = at.pills(key="_attention-query-sentence")
    assert query.options == ["the", "glass", "bottle", "is", "big"] and query.value == 2
    assert "query 2: bottle" in title(at, "attention-query-backward")
    query.set_value(1).run()
    assert "query 1: glass" in title(at, "attention-query-forward")
    at.session_state["text"] = "a man is pouring tea of the restaurant"  # as the sidebar's text box does
    at.run()
    assert at.pills(key="_attention-query-sentence").value == 4  # a new sentence starts in its middle again


def test_a_click_on_a_repeated_token_picks_that_one(checkpoints):
    at = visit(app(text="the cat saw the dog near the tea"), "app_pages/attention.py")
    at.pills(key="_attention-query-sentence").set_value(3).run()  # the second "the"
    assert "backward · query 3: the" in title(at, "attention-query-backward")
    at.pills(key="_attention-query-sentence").set_value(0).run()  # the first
    assert "backward · query 0: the" in title(at, "attention-query-backward")


def test_a_long_sentence_shows_a_window_that_follows_the_query(checkpoints):
    words = ("the glass bottle is big a man pouring of tea restaurant about to close biker fountain " * 5).split()
    at = app(text=" ".join(words[:75]))
    pair = lambda: json.loads(charts(at)["attention-pair"].proto.spec)["layout"]["title"]["text"]  # noqa: E731
    assert "tokens 7–66 of 75" in pair() and at.slider(key="_attention-window-sentence").value == (7, 66)
    at.slider(key="_attention-window-sentence").set_value((0, 29)).run()
    assert "tokens 0–29 of 75" in pair()
    at.pills(key="_attention-query-sentence").set_value(70).run()  # a click on a token outside the window
    assert "tokens 15–74 of 75" in pair() and "query 70:" in title(at, "attention-query-forward")


def test_a_one_token_sentence_is_explained_in_words(checkpoints):
    at = app(text="tea")
    assert not charts(at) and "has 1 token, and no token may attend another" in texts(at.info)
    visit(at, "app_pages/gates.py")
    assert len(charts(at)) == 3


def test_pair_models_show_premise_and_hypothesis_side_by_side(checkpoints):
    at = app(checkpoint="b-entailment")
    assert [t.label for t in at.sidebar.text_area] == ["Premise", "Hypothesis"]
    # the Attention page's last section compares the blocks token by token: a chart, never an empty note
    expected = {"app_pages/attention.py": 5, "app_pages/gates.py": 3, "app_pages/source2token.py": 2}
    for page, count in expected.items():
        visit(at, page)
        sides = [c for c in at.columns if len(c.subheader) and c.subheader[0].value in ("Premise", "Hypothesis")]
        assert [c.subheader[0].value for c in sides] == ["Premise", "Hypothesis"]
        assert [c.weight for c in sides] == [0.5, 0.5]  # two columns of one row: side by side
        drawn = list(charts(at))
        assert len(drawn) == 2 * count and sum(k.startswith("premise-") for k in drawn) == count, drawn
    visit(at, "app_pages/attention.py")
    assert at.metric[0].value in ("entailment", "neutral", "contradiction")
    premise, hypothesis = at.pills(key="_attention-query-premise"), at.pills(key="_attention-query-hypothesis")
    assert len(premise.options) == 8 and len(hypothesis.options) == 5
    hypothesis.set_value(4).run()
    assert "query 4: tea" in title(at, "hypothesis-attention-query-forward")
    assert "query 4: a ·" in title(at, "premise-attention-query-forward")  # the premise keeps its middle


def elements(node) -> list:
    """Every element and block under ``node`` in the order the page shows them (depth first)."""
    out = []
    for child in getattr(node, "children", {}).values():
        out += [child, *elements(child)]
    return out


@pytest.mark.parametrize("kind,labels", [("classify", ["bad", "good"]), ("pair", None)])
def test_a_model_without_a_test_split_has_its_explanations_read_under_its_heatmaps(checkpoints, make_checkpoint,
                                                                                 kind, labels):
    from disan.analyses import attribution, explainers, faithfulness
    from disan.render.faithfulness import reading_line

    path = make_checkpoint(kind, name="a-own", labels=labels)  # a task of its own: no test split to sample
    pipe = disan.load(path)
    tokens = [s.tokens for s in pipe.trace(views.PRESET_PAIR if pipe.is_pair else views.PRESET_SENTENCE).sentences]
    at = app(checkpoint="a-own")
    for page, entries in (("app_pages/attention.py", (explainers.ATTENTION_LIFT,)),
                          ("app_pages/source2token.py", (explainers.SOURCE2TOKEN,)),
                          ("app_pages/attribution.py", (*attribution.METHODS, *attribution.ATTENTION))):
        visit(at, page)
        lines = [texts([c]) for c in at.caption if "ranks highest" in c.value]
        assert lines == [reading_line(r, kind) for r in faithfulness.reading(pipe, tokens, entries)], page
        assert len(lines) == {"app_pages/attention.py": 2, "app_pages/source2token.py": 1}.get(page, 5)
        assert not at.get("page_link")  # the Faithfulness page has no test split to sample either
    visit(at, "app_pages/attention.py")
    shown = [e for e in elements(at.main) if e.type in ("caption", "subheader")]
    at_lines = [k for k, e in enumerate(shown) if "ranks highest" in e.value]
    if pipe.is_pair:  # one reading of both sentences, above their columns
        assert shown[at_lines[-1] + 1].value == "Premise"
        return
    # under the heatmaps, before the sharpest features
    assert shown[at_lines[0] - 1].value.startswith("Grey cells are masked")
    assert shown[at_lines[-1] + 1].value == "Sharpest features"
    at.sidebar.text_area[0].input("tea").run()  # one token: no heatmap, and no reading of one
    assert not charts(at) and not [c for c in at.caption if "ranks highest" in c.value]


def senses_title(at) -> str:
    """The title of the Word senses chart: it names the word and the vector kind drawn."""
    return json.loads(charts(at)["senses-heatmaps"].proto.spec)["layout"]["title"]["text"]


def test_word_sense_presets_pick_the_shared_word(checkpoints):
    at = visit(app(), "app_pages/word_senses.py")
    assert at.selectbox(key="_senses-word").value == "glass"
    at.selectbox(key="_senses-preset").set_value("close (paper, Fig. 6)").run()
    assert at.selectbox(key="_senses-word").value == "close"
    assert len(at.dataframe) == 3 and len(charts(at)) == 1
    at.text_area(key="_senses-text").input("one cat\ntwo dogs").run()
    assert "share no word" in texts(at.info)
    assert at.selectbox(key="_senses-preset").value == "(your own sentences)"  # edited: no longer the preset


def test_word_senses_control_and_chart_agree_after_sentences_without_a_shared_word(checkpoints):
    at = visit(app(), "app_pages/word_senses.py")
    at.radio(key="_senses-kind").set_value("output").run()
    assert senses.VECTORS["output"] in senses_title(at)
    at.text_area(key="_senses-text").input("one cat\ntwo dogs").run()
    assert "share no word" in texts(at.info) and not charts(at)
    assert at.radio(key="_senses-kind").value == "output"  # still drawn, still the user's choice
    at.text_area(key="_senses-text").input("the glass bottle\nglass of tea").run()
    radio = at.radio(key="_senses-kind")
    # the widget is sent with the value the chart uses, so the browser cannot show another one
    assert radio.value == "output" and radio.proto.set_value and radio.proto.raw_value == senses.VECTORS["output"]
    assert senses.VECTORS["output"] in senses_title(at)
    radio.set_value("source2token").run()
    assert senses.VECTORS["source2token"] in senses_title(at)


def test_word_senses_label_sentences_in_full_and_pick_an_occurrence(checkpoints):
    long = "A man is pouring a glass of tea while the big glass bottle is near the restaurant"
    at = visit(app(), "app_pages/word_senses.py")
    at.text_area(key="_senses-text").input(f"The glass bottle is big\n{long}").run()
    spec = json.loads(charts(at)["senses-heatmaps"].proto.spec)
    assert spec["data"][0]["y"][1] == f"2: {long}"  # hover: the whole sentence
    assert "<br>" in spec["layout"]["yaxis"]["ticktext"][1]  # the label wraps instead of being cut
    occurrence = at.radio(key="_senses-occurrence-1")
    assert occurrence.options == ["token 5\\: … pouring a \\[glass\\] of tea …",
                                  "token 11\\: … the big \\[glass\\] bottle is …"]
    before = json.loads(charts(at)["senses-heatmaps"].proto.spec)["data"][0]["z"]
    occurrence.set_value(1).run()
    after = json.loads(charts(at)["senses-heatmaps"].proto.spec)["data"][0]["z"]
    assert before != after
    table = at.dataframe[2].value
    assert list(table.columns) == ["feature k", "block", "sentence 1", "sentence 2", "|1 − 2|"]
    assert "absolute difference" in texts(at.caption)


@pytest.mark.parametrize("text,message", [("", "empty"), ("word " * (MAX_TOKENS + 5), str(MAX_TOKENS)),
                                          ("a typed\x00NUL", "control character U+0000 at character 8")])
def test_bad_input_gets_a_message_not_a_traceback(checkpoints, text, message):
    at = app()
    at.sidebar.text_area[0].input(text).run()
    for page in PAGES[:3]:
        visit(at, page)
        assert message in texts(at.warning)


def test_html_in_the_sentence_is_never_rendered(checkpoints):
    at = app()
    at.sidebar.text_area[0].input('<script>alert(1)</script> <img src=x onerror=alert(2)> **bold**').run()
    for page in PAGES[:3]:
        visit(at, page)
        for chart in at.get("plotly_chart"):  # the prediction chart included
            # parsed, not searched as JSON text: the JSON may write "<" as \u003c
            text = " ".join(json_strings(json.loads(chart.proto.spec)))
            assert "<script>" not in text and "<img" not in text and "&lt;script&gt;" in text
    assert "Unknown words" in texts(at.caption)


def test_right_to_left_words_are_isolated_in_the_unknown_words_caption(checkpoints):
    # an Arabic word set among commas and quotes would take them into its direction and reorder the list
    at = app()
    at.sidebar.text_area[0].input("الفيلم رائع שלום").run()
    visit(at, PAGES[0])
    caption = next(t for t in (texts([c]) for c in at.caption) if t.startswith("Unknown words"))
    listed = caption.split(": ", 1)[1]
    assert listed == ", ".join(f"“\u2068{w}\u2069”" for w in sorted(["الفيلم", "رائع", "שלום"]))


def test_two_sessions_see_their_own_sentences(checkpoints):
    first, second = app(), app()
    first.sidebar.text_area[0].input("the glass bottle").run()
    second.sidebar.text_area[0].input("a man is pouring tea of the restaurant").run()
    for at, n in ((first, 3), (second, 8)):
        visit(at, "app_pages/attention.py")
        assert len(at.pills(key="_attention-query-sentence").options) == n


def test_a_baseline_encoder_shows_what_it_has(checkpoints, make_checkpoint):
    make_checkpoint("classify", name="d-bilstm", encoder="bilstm")
    at = app(checkpoint="d-bilstm")
    assert "has no token2token attention" in texts(at.info)
    assert "has no fusion gates" in texts(visit(at, "app_pages/gates.py").info)
    visit(at, "app_pages/source2token.py")
    assert len(charts(at)) == 2


def test_figures_download_in_the_chosen_format(checkpoints):
    at = app(figure_format="svg")
    formats = lambda at: [json.loads(c.proto.config)["toImageButtonOptions"]["format"]  # noqa: E731
                          for c in at.get("plotly_chart")]
    assert formats(at) and set(formats(at)) == {"svg"}
    at = app()
    assert set(formats(at)) == {"png"}


def test_a_retrained_checkpoint_is_loaded_afresh(checkpoints, make_checkpoint):
    at = app(text="the glass bottle")
    panels = lambda: [a["text"] for a in json.loads(charts(at)["attention-pair"].proto.spec)["layout"]["annotations"]]  # noqa: E731
    before = panels()
    make_checkpoint("classify", name="a-sentiment", encoder="disan-nodir")  # rewritten in place
    at.run()
    assert "diag 1 DiSA" in panels() and "diag 1 DiSA" not in before


def decoded(x):
    """A figure's JSON with plotly's typed arrays ({"dtype", "bdata", "shape"}) as numpy arrays."""
    if isinstance(x, dict):
        if "bdata" in x:
            a = np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"]))
            return a.reshape([int(k) for k in str(x["shape"]).split(",")]) if "shape" in x else a
        return {k: decoded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [decoded(v) for v in x]
    return x


def assert_same_json(a, b, where="figure"):
    """Equal JSON trees; numbers within float32 noise (the app traces with one thread, the test may not). An
    empty object is no setting to plotly, and a figure read back from the disk cache leaves it out."""
    if isinstance(a, dict) and isinstance(b, dict):
        a, b = ({k: v for k, v in d.items() if not (isinstance(v, dict) and not v)} for d in (a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-5, atol=1e-7,
                                   err_msg=where)
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            assert_same_json(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same_json(x, y, f"{where}[{k}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-7), where
    else:
        assert a == b, where


def assert_page_draws(at, drawing):
    """The page's figures are the drawing's: the same keys and, once serialised as Streamlit does, the same JSON."""
    drawn = charts(at)
    assert list(drawn) == list(drawing.figures)
    for key, fig in drawing.figures.items():
        assert_same_json(decoded(json.loads(drawn[key].proto.spec)),
                         decoded(json.loads(pio.to_json(fig, validate=False))), key)


SENTENCE = "The glass bottle is big a man"


@pytest.mark.parametrize("encoder", ["disan", "disan-nodir"])
def test_the_pages_draw_the_registry_views(checkpoints, make_checkpoint, encoder):
    path = make_checkpoint("classify", name="a-sentiment", encoder=encoder)
    sentence = disan.load(path).trace_sentence(SENTENCE)
    at = app(text=SENTENCE)
    for page, name in (("app_pages/attention.py", "attention"), ("app_pages/gates.py", "gates"),
                       ("app_pages/source2token.py", "source2token")):
        view = views.VIEWS[name]
        assert_page_draws(visit(at, page), view.draw(sentence, view.options()))  # the page's defaults
    visit(at, "app_pages/attention.py")
    at.radio(key="_attention-mode").set_value("one feature").run()
    at.selectbox(key="_attention-k-sentence").set_value(3).run()
    at.pills(key="_attention-query-sentence").set_value(1).run()
    at.radio(key="_attention-scale").set_value("probability").run()
    assert_page_draws(at, views.attention(sentence, views.AttentionOptions("one feature", 3, None, 1, "probability")))
    second = views.block_names(sentence.trace)[1]
    at.radio(key="_attention-mode").set_value("sharpest features").run()
    at.radio(key="_attention-rank").set_value(second).run()
    ranked = at.selectbox(key="_attention-ranked-sentence")
    assert ranked.options == [views.feature_label(sentence.trace, second, k)
                              for k in views.sharpest_features(sentence.trace, second)]
    shade = list(views.shade_choices(sentence.trace))[-1]
    at.selectbox(key="_attention-shade").set_value(shade).run()
    options = views.AttentionOptions("sharpest features", ranked.value, second, 1, "probability", shade=shade)
    assert_page_draws(at, views.attention(sentence, options))
    assert at.html[0].value == views.attention(sentence, options)["attention-sentence"].body
    pipe = disan.load(path)
    preset = [pipe.trace_sentence(t) for t in senses.PRESETS["glass (paper, Fig. 6)"]]
    assert_page_draws(visit(at, "app_pages/word_senses.py"), views.word_senses(preset))


def test_a_link_opens_the_app_with_its_model_and_sentence_and_follows_changes(checkpoints, make_checkpoint):
    make_checkpoint("classify", name="trec")
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(model="trec", text="What is the big glass bottle made of ?")
    at.run()
    assert not at.exception and at.session_state["checkpoint"] == "trec"
    assert at.pills(key="_attention-query-sentence").options[:3] == ["What", "is", "the"]
    # the URL follows the session's model and text (AppTest reruns only the page script, so a fresh
    # session stands for a changed one; the browser test types into the sidebar)
    # (and the model's digest, by which a link to a model that changed since says so)
    assert app(checkpoint="trec", text="the tea").query_params == {
        "model": "trec", "text": "the tea", "digest": links.version(checkpoints / "trec")}
    pair = AppTest.from_file(APP, default_timeout=60)
    pair.query_params.update(model="b-entailment", text="A man is pouring tea", hypothesis="A man drinks")
    pair.run()
    assert (pair.session_state["premise"], pair.session_state["hypothesis"]) == ("A man is pouring tea", "A man drinks")
    assert len(pair.pills(key="_attention-query-hypothesis").options) == 3


@pytest.mark.parametrize("params,message", [({"model": "nonexistent"}, "not a working checkpoint"),
                                            ({"text": "word " * (MAX_TOKENS + 1)}, f"the limit is {MAX_TOKENS}"),
                                            ({"text": "\x00"}, "control character U+0000")])
def test_a_bad_link_gives_a_message_and_the_defaults(checkpoints, params, message):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(params)
    at.run()
    assert not at.exception and message in texts(at.warning)
    assert at.session_state["checkpoint"] == "a-sentiment" and at.session_state["text"] == views.PRESET_SENTENCE
    assert len(charts(at)) == 5  # the default sentence is drawn


def test_a_truncated_checkpoint_sorted_first_is_never_the_default(checkpoints, make_checkpoint):
    path = make_checkpoint("classify", name="0-truncated")
    weights = path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    at = app()
    assert at.session_state["checkpoint"] == "a-sentiment"
    assert "0-truncated" not in " ".join(at.sidebar.selectbox[0].options)
    listed = texts(at.sidebar.expander[0].text)
    assert "0-truncated: " in listed and "corrupt or truncated" in listed
    visit(at, "app_pages/models.py")
    broken = [e for e in at.expander if e.label.startswith("0-truncated")]
    assert len(broken) == 1 and "corrupt or truncated" in texts(broken[0].error)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["model"] = "0-truncated"
    at.run()
    assert at.session_state["checkpoint"] == "a-sentiment" and "not a working checkpoint" in texts(at.warning)


def test_the_toolbar_has_no_deploy_button_and_every_page_a_title_and_icon():
    config = (Path(APP).parent / ".streamlit" / "config.toml").read_text()
    assert tomllib.loads(config)["client"]["toolbarMode"] == "minimal"
    assert tomllib.loads(config)["browser"]["gatherUsageStats"] is False  # a research tool sends nothing out
    source = Path(APP).read_text()
    pages = re.findall(r'st\.Page\("(app_pages/\w+\.py)", title="([^"]+)", icon="(:material/\w+:)"', source)
    assert sorted(p for p, _, _ in pages) == sorted(f"app_pages/{p.name}" for p in (Path(APP).parent / "app_pages").glob("*.py"))


def test_a_training_process_importing_the_app_logs_no_warning():
    # multiprocessing's spawn runs app.py as __mp_main__ in every training process the Training page starts
    done = subprocess.run([sys.executable, "-c", "import runpy; runpy.run_path('app.py', run_name='__mp_main__')"],
                          cwd=Path(APP).parent, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ScriptRunContext" not in done.stderr, done.stderr


def test_runs_started_from_the_app_are_ignored_by_git_and_the_shipped_checkpoints_are_not():
    root = Path(APP).parent
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    run = "checkpoints/trec-disan-20260101-120000"  # the Training page's default name: task-encoder-time
    paths = [f"{run}/model.safetensors", f"{run}.resume.pt"] + [str(p.relative_to(root) / "config.json")
                                                                for p in SHIPPED.iterdir() if p.is_dir()]
    done = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=root, capture_output=True, text=True)
    assert done.stdout.split() == paths[:2]


@pytest.mark.quick
def test_a_table_wider_than_the_page_wraps_its_long_texts_and_keeps_its_verdict_and_count_whole():
    claim = "backward, mean over features: a few words receive large attention from all others"
    measured = ("received ÷ uniform: content 1.234, stop 0.987; Δ +0.247 [+0.200, +0.300] (3 of 1000 resamples "
                "lacked a class)")
    table = pd.DataFrame({"holds?": ["yes, small", "no"], "paper claim": [claim, claim], "measured": [measured, "Gini"],
                          "n": [2000, 2]})
    config, row_height = layout(table)
    widths = {c: v["width"] for c, v in config.items()}
    assert sum(widths.values()) <= PAGE_PX < 818  # the main column at a 1280-px window
    # widths in Chromium, Source Sans at 14 px, and a cell's padding of 8 px a side
    yes_small, count, header, text_px = 57.3 + 16, 27.8 + 16, 146.4 + 16, 6.3  # the last: a character on average
    assert widths["holds?"] >= yes_small and widths["n"] >= count  # whole
    assert widths["measured"] < len(measured) * text_px < 2 * widths["measured"]  # wrapped over a few lines
    assert row_height > 64  # Streamlit wraps text only in rows taller than 4 rem
    config, row_height = layout(table[["holds?", "n"]])  # a table that fits: one line, each column as wide as it needs
    assert row_height is None and config["holds?"]["width"] >= yes_small
    senses = pd.DataFrame({"sentences": ["1 and 2"], "other pairs below “glass”": ["75% of 20"]})
    config, _ = layout(senses)  # short values under a longer header: as wide as the header
    assert config["other pairs below “glass”"]["width"] >= header > config["sentences"]["width"]
    # a number too wide for a half-page panel's share is not wrapped: the drawing must split such a table
    numbers = pd.DataFrame({f"share at distance {k} ÷ uniform": [0.5] for k in range(4)})
    config, row_height = layout(numbers, share(2))
    assert row_height is None and sum(v["width"] for v in config.values()) > share(2)


@pytest.mark.quick
def test_an_undefined_cell_shows_a_dash_and_its_column_says_why():
    import pyarrow as pa
    at = AppTest.from_string("""
import numpy as np
import pandas as pd
import streamlit as st
from disan.app.drawing import table
from disan.render.tables import why_undefined
profile = pd.DataFrame({"measure": ["last token share", "mean gate"], "this feature": [0.0, 0.4],
                        "uniform": [0.0, None], "÷ uniform": [np.nan, np.nan], "note": ["kept", None]})
table(st, why_undefined(profile, {"÷ uniform": "uniform attention gives it nothing to divide by"}))
""", default_timeout=60).run()
    assert not at.exception
    proto = at.dataframe[0].proto
    shown = pa.ipc.open_stream(proto.arrow_data.styler.display_values).read_all().to_pandas()
    assert list(shown["÷ uniform"]) == ["—", "—"] and list(shown["uniform"]) == ["0.000", "—"]
    assert shown["note"].iloc[1] == "—" and not shown.isin(["None", "nan", "NaN", "<NA>"]).any().any()
    helps = {c: v.get("help") for c, v in json.loads(proto.columns).items()}
    assert helps["÷ uniform"] == "—: uniform attention gives it nothing to divide by"
    assert helps["uniform"].startswith("—: ") and helps["note"].startswith("—: ")  # no reason given: still one
    assert helps["measure"] is None and helps["this feature"] is None  # nothing undefined: no tooltip
    assert proto.placeholder == "—"  # what the grid draws for a missing value, which the Styler does not reach


@pytest.mark.quick
def test_the_training_forms_name_and_recipe_items_make_the_run(tmp_path, monkeypatch):
    from disan.app import training
    from disan.data.paths import CHECKPOINTS_ENV
    monkeypatch.setenv(CHECKPOINTS_ENV, str(tmp_path))
    assert training.checkpoint_name(" mine ", "disan", "trec", None) == "mine"
    assert training.checkpoint_name("", "bilstm", None, {"data": "/d/reviews.csv"}).startswith("reviews-bilstm-")
    for bad in ("../up", "a/b", ".hidden"):
        with pytest.raises(ValueError, match="slashes or start with a dot"):
            training.checkpoint_name(bad, "disan", "trec", None)
    (tmp_path / "taken").mkdir()
    with pytest.raises(ValueError, match=f"{tmp_path / 'taken'} exists already"):
        training.checkpoint_name("taken", "disan", "trec", None)  # a run never replaces a listed checkpoint
    fields = dict(task="trec", encoder="disan", epochs=2, patience=1, lr=0.001, optimizer="adam", dropout=0.1,
                  d_h=30, vectors="", seed=3, cap=0)
    plain = training.train_config("run", None, (), **fields)
    assert plain.out == str(tmp_path / "run") and plain.dropout == 0.1 and plain.max_train is None
    assert plain.command and "--task trec" in plain.command
    assert plain.keep_state is False  # a run finished from the page leaves no state file behind
    # the authors' recipe item that sets the dropout wins over the form's field
    item = next(i for i, _, flags in training.RECIPE_ITEMS if "dropout" in flags)
    assert training.train_config("run", None, (item,), **fields).dropout == 0.3  # the paper's keep rate 0.7


@pytest.mark.quick
def test_the_atlas_pages_know_which_encoders_have_blocks(make_checkpoint):
    from disan.app.analyses import encoder_parts
    from disan.inspect.catalog import list_checkpoints
    make_checkpoint(name="disan")
    root = make_checkpoint(name="lstm", encoder="bilstm").parent
    blocks = {e.name: encoder_parts(e)["blocks"] for e in list_checkpoints(root)}
    assert blocks == {"disan": True, "lstm": False}


def test_a_restarted_server_traces_a_sentence_it_has_traced_before_without_spacy(checkpoints, tmp_path):
    """Tokenising imports spaCy, half a second of a server's first page: a sentence's tokens are kept on disk,
    so a new server process traces the same sentence again, to the same figures, without importing it."""
    code = ("import hashlib, sys\n"
            "from streamlit.testing.v1 import AppTest\n"
            f"at = AppTest.from_file({APP!r}, default_timeout=120)\n"
            "at.run()\n"
            "assert not at.exception, at.exception\n"
            "spec = next(c.proto.spec for c in at.get('plotly_chart') if c.key == 'attention-pair')\n"
            "print('spacy' in sys.modules, hashlib.sha256(spec.encode()).hexdigest())\n")
    env = {**os.environ, "DISAN_CACHE_DIR": str(tmp_path / "cache")}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr
    (first_spacy, first_figure), (again_spacy, again_figure) = (run.stdout.split() for run in runs)
    assert (first_spacy, again_spacy) == ("True", "False") and again_figure == first_figure


@pytest.mark.quick
def test_kept_tokens_follow_the_tokenizer_and_a_refused_text_is_not_kept(monkeypatch, tmp_path):
    monkeypatch.setenv(diskcache.DIR_ENV, str(tmp_path))
    tokenised = []
    monkeypatch.setattr(traces, "check_text", lambda text: tokenised.append(text) or check_text(text))
    assert traces.sentence_tokens("The glass, broken.") == ["The", "glass", ",", "broken", "."]
    assert traces.sentence_tokens("The glass, broken.") == ["The", "glass", ",", "broken", "."]
    assert tokenised == ["The glass, broken."]  # the second from disk
    monkeypatch.setattr(traces, "tokenizer_version", lambda: "spacy 0.0")  # another spaCy: tokenised afresh
    traces.sentence_tokens("The glass, broken.")
    assert tokenised == ["The glass, broken."] * 2
    for _ in range(2):
        with pytest.raises(ValueError, match="empty"):
            traces.sentence_tokens("   ")
    assert tokenised[2:] == ["   "] * 2


@pytest.mark.quick
def test_a_kept_value_stays_while_what_it_belongs_to_does_and_a_number_keeps_to_its_bounds():
    def script():
        import streamlit as st

        from disan.app import widgets
        st.session_state["runs"] = st.session_state.get("runs", 0) + 1
        st.markdown(str(widgets.kept("query", st.session_state.get("sentence", "a"), lambda: st.session_state["runs"])))
        st.markdown(str(widgets.number(st, "Inputs", "n", 5, 50, 20)))

    at = AppTest.from_function(script, default_timeout=60).run()
    assert [m.value for m in at.markdown] == ["1", "20"]
    at.run()
    assert at.markdown[0].value == "1"  # the same sentence: the value chosen for it is kept
    at.session_state["sentence"] = "b"
    at.session_state["n"] = 500  # a kept value past the bound (another corpus's) comes back inside it
    at.run()
    assert [m.value for m in at.markdown] == ["3", "50"]


@pytest.mark.quick
def test_a_listed_checkpoint_is_keyed_by_its_folder_and_its_configs_time_and_says_whether_it_reads_pairs(
        make_checkpoint):
    from disan.app import models
    from disan.inspect.catalog import list_checkpoints
    one, two = make_checkpoint("classify", name="one"), make_checkpoint("pair", name="two")
    listed = {e.name: e for e in list_checkpoints(one.parent)}
    path, stamp = models.checkpoint_args(listed["one"])
    assert path == str(listed["one"].directory) and stamp == (one / checkpoint.CONFIG).stat().st_mtime
    os.utime(one / checkpoint.CONFIG, (stamp + 10, stamp + 10))  # a run saved a better model: another key
    assert models.checkpoint_args(listed["one"])[1] == stamp + 10
    assert not models.reads_pairs(listed["one"]) and models.reads_pairs(listed["two"])
    assert models.default_checkpoint(list(listed.values())) in listed


@pytest.mark.quick
def test_a_pair_is_drawn_at_half_width_and_a_sentence_at_the_whole_page():
    from disan.app import opening
    assert opening.drawing_width(["sentence"]) == views.FULL
    assert opening.drawing_width(["premise", "hypothesis"]) == views.HALF < views.FULL
