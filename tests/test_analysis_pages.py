"""The five analysis pages through Streamlit's AppTest, on tiny checkpoints made by the tests."""
import pytest

import disan
from disan.data import files
from disan.render import corpus as corpus_render
from disan.render import views
from disan.analyses import corpus
from disan.nn import checkpoint

from .conftest import LABELS, make_model
from .test_app import app, assert_page_draws, charts, texts, title, visit
from .test_own_data import ROWS, write_csv

PAGES = {"corpus": "app_pages/corpus_senses.py", "counterfactuals": "app_pages/counterfactuals.py",
         "attribution": "app_pages/attribution.py", "compare": "app_pages/compare_models.py", "case": "app_pages/case_study.py"}
PAIR_KINDS = {"sick-e": "pair", "sick": "relatedness"}


@pytest.fixture
def models(tmp_path, monkeypatch):
    """Tiny checkpoints named for benchmarks, so that their test split is the pages' corpus; returns a
    function that adds one: (name, task, encoder)."""
    def add(name, task="trec", encoder="disan", seed=0):
        kind = PAIR_KINDS.get(task, "classify")
        model, vocab = make_model(kind, encoder, seed)
        checkpoint.save(tmp_path / name, model, vocab, {"task": task, "kind": kind, "labels": LABELS[kind]},
                        {"test": {"accuracy": 0.5}}, "# tiny\n")
        return tmp_path / name
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    add("a-trec")
    return add


@pytest.mark.usefixtures("data_root")
def test_every_analysis_page_draws_with_its_defaults(models):
    models("b-trec-nodir", encoder="disan-nodir")
    at = app()
    assert at.session_state["checkpoint"] == "a-trec"
    expected = {
        "corpus": {"corpus-scatter"},
        "counterfactuals": {"cf-edit-prediction", "cf-edit-forward", "cf-edit-backward", "cf-occlusion-bars",
                            "cf-knockout-prediction", "cf-knockout-forward", "cf-knockout-backward-change"},
        "attribution": {"attr-measures-0", "attr-corpus-0", "attr-corpus-1"},
        "compare": {"compare-prediction-a", "compare-attention-b-diag_1", "compare-gates", "compare-s2t-diff"},
        "case": {"case-received", "case-gates", "case-gini", "case-tau", "case-paper-0-received"},
    }
    for name, keys in expected.items():
        visit(at, PAGES[name])
        drawn = set(charts(at))
        assert keys <= drawn, (name, keys - drawn)
    claims = at.dataframe[0].value
    assert list(claims.columns) == ["holds?", "paper claim", "measured", "null", "n"] and len(claims) == 9


@pytest.mark.usefixtures("data_root")
def test_the_corpus_page_draws_the_library_view_and_opens_a_sentence(models, tmp_path):
    at = visit(app(), PAGES["corpus"])
    trec = corpus.benchmark_corpus("trec", "test")
    word = at.selectbox(key="_corpus-word").value
    assert word == corpus.frequent_words(trec)[0]
    pipe = disan.load(tmp_path / "a-trec")
    result = corpus.analyse(pipe, trec, word, "source2token")
    assert_page_draws(at, corpus_render.drawing(result, "cluster", 0, corpus.neighbours(result, 0)))
    at.selectbox(key="_corpus-selected").set_value(2).run()
    at.button(key="corpus-open").click().run()
    assert at.session_state["text"] == trec.texts[int(result.table.sentence[2])]
    assert "Token2token attention" in texts(at.header)


def test_without_benchmark_data_the_pages_say_how_to_get_it(models, monkeypatch, tmp_path):
    monkeypatch.setenv("DISAN_DATA_DIR", str(tmp_path / "no-data"))
    at = visit(app(), PAGES["corpus"])
    assert "python -m disan download" in texts(at.info)
    at.file_uploader(key="corpus-upload").set_value(
        ("mine.txt", b"the glass bottle is big\na man is pouring a glass of tea\nthe glass\n", "text/plain")).run()
    assert not at.exception and at.selectbox(key="_corpus-word").value == "glass"
    assert "corpus-scatter" in charts(at)
    visit(at, PAGES["case"])
    assert "python -m disan download" in texts(at.info) and "case-paper-1-gates" in charts(at)
    visit(at, PAGES["attribution"])
    assert "python -m disan download" in texts(at.info) and "attr-measures-0" in charts(at)


def test_counterfactual_widgets_change_what_is_drawn(models):
    at = visit(app(text="the glass bottle is big"), PAGES["counterfactuals"])
    at.radio(key="_cf-op").set_value("replace").run()
    at.selectbox(key="_cf-position").set_value(1).run()
    at.text_input(key="_cf-replacement").input("tea").run()
    assert "After: the tea bottle is big" in texts(at.text)
    at.multiselect(key="_cf-keys").set_value([0, 2]).run()
    at.multiselect(key="_cf-blocks").set_value(["backward"]).run()
    drawn = charts(at)
    assert "cf-knockout-backward" in drawn and "cf-knockout-forward" not in drawn
    at.multiselect(key="_cf-keys").set_value([]).run()
    assert "choose at least one attended token" in texts(at.info)


def test_pair_models_edit_the_chosen_sentence(models):
    models("c-sick-e", task="sick-e")
    at = visit(app(checkpoint="c-sick-e"), PAGES["counterfactuals"])
    at.radio(key="_cf-sentence").set_value("hypothesis").run()
    assert not at.exception
    occlusion = next(df.value for df in at.dataframe)
    assert sorted(occlusion.token) == sorted(at.session_state["hypothesis"].split())


def test_compare_says_what_an_encoder_lacks(models):
    at = visit(app(), PAGES["compare"])
    assert "No other checkpoint takes the same input" in texts(at.info)
    models("d-bilstm", encoder="bilstm")
    models("e-sick-e", task="sick-e")  # a pair model is never offered against a sentence model
    at = visit(app(), PAGES["compare"])
    assert at.selectbox(key="_compare-other").options == ["d-bilstm — trec, bilstm, test accuracy 0.500"]
    statements = texts(at.text)
    assert "has every part of DiSAN" in statements and "d-bilstm (bilstm) has no token2token attention" in statements
    drawn = charts(at)
    assert "compare-attention-a-forward" in drawn and not any(k.startswith("compare-attention-b") for k in drawn)
    models("g-trec-nodir", encoder="disan-nodir")
    at = visit(app(), PAGES["compare"])
    at.selectbox(key="_compare-other").set_value("g-trec-nodir").run()  # not the first model offered
    assert not at.exception and "compare-attention-b-diag_1" in charts(at)


def test_a_baseline_encoder_gets_a_message_where_it_lacks_the_parts(models):
    models("f-bilstm", encoder="bilstm")
    at = visit(app(checkpoint="f-bilstm"), PAGES["case"])
    assert "cannot be studied" in texts(at.info)
    visit(at, PAGES["counterfactuals"])
    assert "has no token2token attention to knock out" in texts(at.info)


@pytest.fixture
def file_model(tmp_path, monkeypatch):
    """A tiny untrained checkpoint that records a data file, as a run on it does: (data file, test texts)."""
    data = write_csv(tmp_path / "reviews.csv", ROWS)
    task = files.load_file_task(data, "review", "sentiment")
    model, vocab = make_model("classify")
    checkpoint.save(tmp_path / "ck" / "mine", model, vocab, {"task": task.name, "kind": task.kind, "labels": task.labels,
                                                            "data": task.source}, {"test": {"accuracy": 0.5}}, "# mine\n")
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path / "ck"))
    monkeypatch.setenv("DISAN_DATA_DIR", str(tmp_path / "no-benchmarks"))  # the file needs none
    return data, [ROWS[r][0] for r in task.source["rows"]["test"]]


def test_the_corpus_pages_use_the_recorded_test_split_and_say_when_the_file_changed(file_model):
    data, test = file_model
    at = visit(app(), PAGES["corpus"])
    assert at.radio(key="_corpus-source").value == "test split of reviews.csv"
    words = at.selectbox(key="_corpus-word").options
    assert words and set(words) <= {w.strip(",").lower() for text in test for w in text.split()}
    assert "corpus-scatter" in charts(at)
    visit(at, PAGES["attribution"])
    assert "attr-corpus-0" in charts(at) and not at.error

    write_csv(data, ROWS[::-1])  # the same rows in another order: another SHA-256
    for page in (PAGES["corpus"], PAGES["case"], "app_pages/feature_atlas.py"):
        visit(at, page)
        assert "The test split of reviews.csv cannot be read" in texts(at.error) and "has changed" in texts(at.error)
    visit(at, PAGES["attribution"])
    assert "has changed since the model was trained" in texts(at.error) and "attr-corpus-0" not in charts(at)
    data.unlink()
    visit(at, PAGES["corpus"])
    assert "is not there any more" in texts(at.error)


def test_compare_and_counterfactuals_move_their_window_over_a_long_sentence(models):
    # the Attention page's window control, on the pages that draw tokens x tokens: it starts around the middle
    # token (Compare), the edited token (Edit) or the first key knocked out (Knockout), and a move redraws
    models("b-trec-nodir", encoder="disan-nodir")
    words = ("the glass bottle is big a man pouring of tea restaurant about to close biker fountain " * 5).split()
    n = 75
    at = visit(app(text=" ".join(words[:n])), PAGES["compare"])
    start, stop = views.default_window(n, views.default_query(n))
    assert at.slider(key="_compare-window").value == (start, stop - 1)
    assert title(at, "compare-attention-a-forward").endswith(f"tokens {start}–{stop - 1} of {n}")
    at.slider(key="_compare-window").set_value((0, 29)).run()
    for key in ("compare-attention-a-forward", "compare-attention-b-diag_1", "compare-s2t", "compare-gates"):
        assert "tokens 0–29 of 75" in title(at, key), key
    visit(at, PAGES["counterfactuals"])
    at.radio(key="_cf-op").set_value("delete").run()
    at.selectbox(key="_cf-position").set_value(70).run()
    start, stop = views.default_window(n, 70)
    assert at.slider(key="_cf-edit-window").value == (start, stop - 1)
    at.slider(key="_cf-edit-window").set_value((0, 29)).run()
    # the heatmaps draw the 74 tokens both sentences share: the window's 30, token 70 being deleted outside it
    assert title(at, "cf-edit-forward").endswith("tokens 0–29 of 74")
    at.multiselect(key="_cf-keys").set_value([60, 10]).run()
    start, stop = views.default_window(n, 10)
    assert at.slider(key="_cf-knockout-window").value == (start, stop - 1)
    assert title(at, "cf-knockout-forward").endswith(f"tokens {start}–{stop - 1} of {n}")
    at.slider(key="_cf-knockout-window").set_value((40, n - 1)).run()
    assert title(at, "cf-knockout-backward-change").endswith(f"tokens 40–{n - 1} of {n}")
