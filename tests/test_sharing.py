"""What the app shares, through Streamlit's AppTest: a page's settings in its URL (disan.app.links,
disan.app.widgets): a link opens a page with each setting, a link beyond the page's bounds gets a message and
the rest of it is still followed, the URL follows what the page draws, and a shared link draws the same
figures; and the input's HTML report, which the pages download, is the file `disan report` writes."""
import json

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from disan.__main__ import run
from disan.app import links

from .test_analysis_pages import models  # noqa: F401 (fixture)
from .test_app import APP, app, charts, checkpoints, texts, title, visit  # noqa: F401 (fixture)

WORDS = ("the glass bottle is big a man pouring of tea restaurant about to close biker fountain " * 5).split()
LONG = " ".join(WORDS[:75])  # over the 60 tokens a heatmap shows at once: the window is a setting


def opened(params: dict, page: str | None = None) -> AppTest:
    """A new session opened on a link with ``params``, on ``page`` (the URL's path; default: the Attention page)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params)
    if page is not None:
        at.switch_page(page)
    at.run()
    assert not at.exception, at.exception
    return at


def figures(at: AppTest) -> dict:
    """Every figure of the page by key, as the browser gets it."""
    return {key: json.loads(chart.proto.spec) for key, chart in charts(at).items()}


def heatmap_x(at: AppTest, key: str) -> list:
    """The attended tokens (columns) of the first heatmap of a figure."""
    return next(t["x"] for t in figures(at)[key]["data"] if t["type"] == "heatmap")


def test_a_link_opens_the_attention_page_with_each_setting(checkpoints):
    at = opened({"model": "a-sentiment", "text": LONG, "attention-mode": "one feature", "attention-k-sentence": "3",
                 "attention-rank": "backward", "attention-scale": "probability", "attention-query-sentence": "20",
                 "attention-window-sentence": "10-69", "attention-shade": "gate forward"})
    assert not at.warning
    assert f"query 20: {WORDS[20]}" in title(at, "attention-query-forward")
    pair = title(at, "attention-pair")
    assert "feature k = 3" in pair and "probability" in pair and "tokens 10–69 of 75" in pair
    columns = heatmap_x(at, "attention-pair")
    assert columns[0] == f"attended 10: {WORDS[10]}" and len(columns) == 60
    assert at.radio(key="_attention-rank").value == "backward"
    assert at.selectbox(key="_attention-shade").value == "gate forward"
    assert "mean fusion gate F in the forward block" in at.html[0].value  # the sentence shaded by it


def test_a_link_beyond_the_pages_bounds_says_so_and_the_rest_of_it_is_followed(checkpoints):
    at = opened({"model": "a-sentiment", "text": LONG, "attention-mode": "sharpest",
                 "attention-scale": "probability", "attention-query-sentence": "99",
                 "attention-window-sentence": "50-200"})
    said = texts(at.warning)
    assert "features “\u2068sharpest\u2069” is not among this page's choices" in said
    assert "query token “\u206899\u2069” is not among this page's choices (0 to 74); showing “\u206837\u2069”" in said
    assert "token window 50-200 is outside what this page allows (0 to 74); showing 50-74" in said
    # the mode and the query are the page's defaults; the scale and the window (brought inside) are the link's
    assert at.radio(key="_attention-mode").value == "mean"
    assert "query 37:" in title(at, "attention-query-forward")
    assert "probability, tokens 50–74 of 75" in title(at, "attention-pair")
    # the URL shows what the page shows: the window as drawn, no query (the default) and no bad mode
    assert {k: at.query_params.get(k) for k in ("attention-mode", "attention-query-sentence",
                                                "attention-window-sentence", "attention-scale")} == {
        "attention-mode": None, "attention-query-sentence": None, "attention-window-sentence": "50-74",
        "attention-scale": "probability"}


def test_a_shared_link_draws_what_its_author_saw(checkpoints):
    at = app(text=LONG)
    at.radio(key="_attention-mode").set_value("max").run()
    at.radio(key="_attention-scale").set_value("probability").run()
    at.pills(key="_attention-query-sentence").set_value(70).run()
    at.slider(key="_attention-window-sentence").set_value((12, 71)).run()
    shared = dict(at.query_params)
    assert {k: shared[k] for k in ("attention-mode", "attention-scale", "attention-query-sentence",
                                   "attention-window-sentence")} == {
        "attention-mode": "max", "attention-scale": "probability", "attention-query-sentence": "70",
        "attention-window-sentence": "12-71"}
    again = opened(shared)
    assert not again.warning and figures(again) == figures(at)
    # a pair: each side's settings under its own name
    at = app(checkpoint="b-entailment")
    at.pills(key="_attention-query-hypothesis").set_value(4).run()
    at.radio(key="_attention-mode").set_value("one feature").run()
    at.selectbox(key="_attention-k-premise").set_value(1).run()
    shared = dict(at.query_params)
    assert shared["attention-query-hypothesis"] == "4" and shared["attention-k-premise"] == "1"
    assert figures(opened(shared)) == figures(at)


def test_a_shared_link_restores_the_counterfactuals_tab_and_edits(checkpoints):
    at = visit(app(text="the glass bottle is big"), "app_pages/counterfactuals.py")
    at.radio(key="_cf-op").set_value("replace").run()
    at.selectbox(key="_cf-position").set_value(1).run()
    at.text_input(key="_cf-replacement").input("tea").run()
    at.multiselect(key="_cf-keys").set_value([0, 2]).run()
    at.session_state["cf-tab"] = "Attention knockout"  # as a click on the tab does
    at.run()
    shared = dict(at.query_params)
    assert {k: shared[k] for k in ("cf-tab", "cf-op", "cf-position", "cf-replacement", "cf-keys")} == {
        "cf-tab": "Attention knockout", "cf-op": "replace", "cf-position": "1", "cf-replacement": "tea",
        "cf-keys": "0,2"}
    again = opened(shared, "app_pages/counterfactuals.py")
    assert not again.warning and again.session_state["cf-tab"] == "Attention knockout"
    assert "After: the tea bottle is big" in texts(again.text) and figures(again) == figures(at)


def test_word_senses_links_carry_the_sentences_the_word_and_the_occurrence(checkpoints):
    lines = "the glass of tea is a glass\nthe man is pouring a glass"
    at = opened({"model": "a-sentiment", "senses-preset": "(your own sentences)", "senses-text": lines,
                 "senses-word": "glass", "senses-occurrence-0": "1"}, "app_pages/word_senses.py")
    assert not at.warning and at.text_area(key="_senses-text").value == lines
    assert at.radio(key="_senses-occurrence-0").value == 1
    again = opened(dict(at.query_params), "app_pages/word_senses.py")
    assert figures(again) == figures(at)


def test_the_url_holds_the_settings_of_the_page_shown(checkpoints):
    at = app()
    at.radio(key="_attention-mode").set_value("max").run()
    assert at.query_params["attention-mode"] == "max"
    visit(at, "app_pages/gates.py")
    assert "attention-mode" not in at.query_params and at.query_params["model"] == "a-sentiment"
    visit(at, "app_pages/attention.py")  # the session kept the setting, and the URL shows it again
    assert at.query_params["attention-mode"] == "max"
    at.radio(key="_attention-mode").set_value("one feature").run()
    assert "attention-k-sentence" not in at.query_params  # the default feature: left out
    at.radio(key="_attention-mode").set_value("mean").run()
    assert "attention-mode" not in at.query_params


def test_a_link_to_a_model_changed_since_says_so(checkpoints):
    path = checkpoints / "a-sentiment"
    digest = links.version(path)
    at = opened({"model": "a-sentiment", "digest": digest})
    assert not at.warning and at.query_params["digest"] == digest
    config = path / "config.json"
    config.write_text(config.read_text().replace("{", '{"note": "retrained", ', 1))
    at = opened({"model": "a-sentiment", "digest": digest})
    said = texts(at.warning)
    assert f"made with another version of a-sentiment (digest {digest}; here it is {links.version(path)})" in said
    assert at.query_params["digest"] == links.version(path)  # the URL names the model as it is now


@pytest.mark.usefixtures("data_root")
def test_a_link_opens_the_faithfulness_page_on_its_tab_and_sample(models):  # noqa: F811
    at = opened({"model": "a-trec", "faith-tab": "Randomisation", "faith-n": "0", "faith-removal": "unk"},
                "app_pages/faithfulness.py")
    assert "number of test inputs 0 is outside what this page allows (1 to 2000); showing 1" in texts(at.warning)
    assert at.number_input(key="_faith-n").value == 1 and at.radio(key="_faith-removal").value == "unk"
    # only the open tab draws: the cascade's button, not the erasure curves
    assert "faith-cascade" in [b.key for b in at.button] and "faith-erasure-bars" not in charts(at)
    assert at.query_params["faith-tab"] == "Randomisation" and at.query_params["faith-n"] == "1"


@pytest.mark.parametrize("page", ["app_pages/attention.py", "app_pages/attribution.py"])
def test_the_pages_report_is_the_file_disan_report_writes(checkpoints, monkeypatch, tmp_path, page):
    made = {}  # the download buttons' data, made only when clicked: the function each button is given
    add = MediaFileManager.add_deferred

    def kept(self, data, mimetype, coordinates, file_name=None, **kwargs):
        made[file_name] = data
        return add(self, data, mimetype, coordinates, file_name=file_name, **kwargs)
    monkeypatch.setattr(MediaFileManager, "add_deferred", kept)
    text = "the man is pouring <b>tea</b>"
    visit(app(checkpoint="a-sentiment", text=text), page)
    out = tmp_path / "report.html"
    assert run(["report", str(checkpoints / "a-sentiment"), text, "--out", str(out)]) == 0
    assert made["disan-report-a-sentiment.html"]() == out.read_bytes()
