"""The Training page on a file of one's own, through Streamlit's AppTest: a file picked in the data folder,
its preview, column pickers and label balance, bad files and bad settings as messages, a tiny run to
completion."""
import json

import pytest
import streamlit as st

from .test_app import app, charts, decoded, texts, visit
from .test_own_data import ROWS, write_csv
from .test_training_page import status, wait

PAGE = "app_pages/training.py"


@pytest.fixture
def server(tmp_path, monkeypatch):
    """A data folder holding reviews.csv (48 rows, two classes), and empty uploads and checkpoints folders."""
    data, ckdir = tmp_path / "data", tmp_path / "checkpoints"
    data.mkdir()
    ckdir.mkdir()
    write_csv(data / "reviews.csv", ROWS)
    monkeypatch.setenv("DISAN_DATA_DIR", str(data))
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(ckdir))
    monkeypatch.setenv("DISAN_UPLOADS", str(tmp_path / "uploads"))
    st.cache_resource.clear()  # a fresh job registry
    yield data, ckdir
    st.cache_resource.clear()


def own_file(at, name="reviews.csv"):
    """Choose a file of one's own in the data folder."""
    at.radio(key="train-source").set_value("a file of your own").run()
    at.radio(key="train-file-how").set_value("pick one kept on the server").run()
    at.selectbox(key="train-file").set_value(name).run()
    assert not at.exception
    return at


def bars(at) -> tuple[list, list]:
    """(x, y) of the label balance chart."""
    trace = decoded(json.loads(charts(at)["train-balance"].proto.spec))["data"][0]
    return list(trace["x"]), [int(v) for v in trace["y"]]


def test_a_picked_file_shows_its_rows_columns_and_label_balance(server):
    data, _ = server
    write_csv(data / "pairs.csv", [(t, t[::-1], str(1 + i % 5)) for i, (t, _) in enumerate(ROWS)], ("a", "b", "score"))
    (data / "notes.txt").write_text("not a table\n")
    at = own_file(visit(app(), PAGE))
    assert at.selectbox(key="train-file").options == ["pairs.csv", "reviews.csv"]
    preview = at.dataframe[0].value
    assert list(preview.columns) == ["review", "sentiment"] and preview.values.tolist() == [list(r) for r in ROWS[:20]]
    assert at.selectbox(key="train-text").value == "review" and at.selectbox(key="train-label").value == "sentiment"
    assert at.selectbox(key="train-kind").options == ["classify"]
    labels, counts = bars(at)
    assert [x.split(": ")[1] for x in labels] == ["negative", "positive"] and counts == [24, 24]
    assert "48 rows: 38 to train on, 5 dev and 5 test" in texts(at.caption)

    at.selectbox(key="train-file").set_value("pairs.csv").run()  # another file: the pickers start again
    assert at.selectbox(key="train-text").value == "a" and at.selectbox(key="train-label").value == "score"
    at.selectbox(key="train-text-b").set_value(2).run()  # by position, 0 for none
    assert at.selectbox(key="train-text-b").options == ["none (one text)", "a", "b", "score"]
    assert at.selectbox(key="train-kind").options == ["pair", "relatedness"]
    assert at.selectbox(key="train-kind").value == "pair"  # the command line's default with a second text
    assert bars(at)[1] == [sum(1 + i % 5 == k for i in range(len(ROWS))) for k in range(1, 6)]
    at.selectbox(key="train-kind").set_value("relatedness").run()
    x, counts = bars(at)
    assert sum(counts) == len(ROWS) and min(x) > 1 and max(x) < 5  # a histogram of the scores 1..5
    assert not at.exception and not at.error


def test_a_bad_file_is_one_message_and_offers_no_start(server):
    data, ckdir = server
    (data / "ragged.csv").write_text("review,sentiment\n" + "fine,positive\nbad,negative\n" * 20 + "a,b,c\n")
    write_csv(data / "one.csv", [(t, "positive") for t, _ in ROWS])
    at = own_file(visit(app(), PAGE), "ragged.csv")
    assert len(at.dataframe) == 1  # the preview reads the first rows only
    assert texts(at.error) == "ragged.csv: line 42 has 3 fields, the header has 2 (ragged rows)"  # no server path
    assert not any(b.label == "Start" for b in at.button)
    at.selectbox(key="train-file").set_value("one.csv").run()
    assert "every row has the label 'positive'" in texts(at.error)
    at.selectbox(key="train-label").set_value("review").run()  # every text a class of its own is allowed
    assert not at.error
    assert not list(ckdir.iterdir())


def test_the_settings_check_is_a_message(server):
    at = own_file(visit(app(), PAGE))
    at.multiselect(key="train-recipe").set_value([8])  # SST's leaves as tokens: for SST only
    at.button[0].click().run()
    assert "Cannot start" in texts(at.error) and "leaves" in texts(at.error) and status(at) == ""


def test_a_run_on_a_picked_file_records_it_and_lists_the_model(server):
    data, ckdir = server
    at = own_file(visit(app(), PAGE))
    at.number_input(key="train-epochs").set_value(1)
    at.number_input(key="train-dh").set_value(8)
    at.text_input(key="train-name").input("mine")
    at.text_input(key="train-vectors").input("glove-50d")
    at.button[0].click().run()
    wait(at, lambda a: "done" in status(a) or "failed" in status(a))
    assert status(at) == "Job mine: done", texts(at.error)
    config = json.loads((ckdir / "mine" / "config.json").read_text())
    assert config["data"]["files"]["data"]["path"] == str((data / "reviews.csv").resolve())
    assert config["data"]["columns"] == {"text": "review", "text_b": None, "label": "sentiment"}
    assert config["train_config"]["data"] == str(data / "reviews.csv") and config["train_config"]["task"] is None
    assert at.dataframe[1].value["examples"].tolist()[0] == 5  # the test split's evaluation: 10% of 48 rows
    fresh = app()
    assert "mine" in fresh.sidebar.selectbox[0].options[0]
