"""The Training page: a tiny run to completion, Stop mid-run, one job per server, failures as messages."""
import json
import re
import time

import pytest
import streamlit as st

from disan.training.config import parse_command_line

from .test_app import app, texts, visit

pytestmark = pytest.mark.usefixtures("data_root")  # every test trains on TREC


@pytest.fixture
def ckdir(tmp_path, monkeypatch):
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    st.cache_resource.clear()  # a fresh job registry for every test
    yield tmp_path
    st.cache_resource.clear()


def fill(at, name, epochs=1, cap=40, d_h=8, vectors="", long=False, patience=3):
    """Fill the form and start. ``long``: the paper's Adadelta (lr 0.5) and a patience no run reaches, so
    that early stopping never ends the run (nor its resumption) before the test stops it."""
    if long:
        at.selectbox(key="train-optimizer").set_value("adadelta")
        at.number_input(key="train-lr").set_value(0.5)
        patience = 500
    at.selectbox(key="train-task").set_value("trec")
    at.number_input(key="train-epochs").set_value(epochs)
    at.number_input(key="train-patience").set_value(patience)
    at.number_input(key="train-dh").set_value(d_h)
    at.number_input(key="train-cap").set_value(cap)
    at.text_input(key="train-name").input(name)
    at.text_input(key="train-vectors").input(vectors)
    at.button[0].click().run()
    assert not at.exception


def wait(at, until, timeout=180):
    start = time.time()
    while time.time() - start < timeout:
        at.run()
        assert not at.exception
        if until(at):
            return at
        time.sleep(0.5)
    raise AssertionError(f"timed out; headers: {texts(at.subheader)}")


def status(at) -> str:
    return next((h.value for h in at.subheader if str(h.value).startswith("Job ")), "")


def test_a_tiny_run_ends_with_a_selectable_checkpoint_and_a_runs_row(ckdir):
    at = visit(app(), "app_pages/training.py")
    fill(at, "tiny-trec")
    wait(at, lambda a: "done" in status(a) or "failed" in status(a))
    assert status(at) == "Job tiny-trec: done", texts(at.error)
    assert "Attention timeline" in texts(at.subheader) and "Evaluation on the test split" in texts(at.subheader)
    metrics = at.dataframe[0].value  # the test figures as a table, not a JSON widget
    assert list(metrics.columns) == ["metric", "value", "examples"] and "accuracy" in list(metrics["metric"])
    runs = at.dataframe[-1].value
    assert list(runs["checkpoint"]) == ["tiny-trec"] and runs["test"][0] > 0
    fresh = app()
    assert "tiny-trec" in fresh.sidebar.selectbox[0].options[0]


def test_the_run_is_saved_in_and_reproduced_from_the_checkpoints_folder(ckdir):
    at = visit(app(), "app_pages/training.py")
    fill(at, "where", d_h=6, patience=7)
    wait(at, lambda a: "done" in status(a) or "failed" in status(a))
    assert status(at) == "Job where: done", texts(at.error)
    command = json.loads((ckdir / "where" / "config.json").read_text())["train_config"]["command"]
    cfg = parse_command_line(command)
    assert cfg.out == str(ckdir / "where")
    assert (cfg.task, cfg.d_h, cfg.epochs, cfg.patience, cfg.max_train) == ("trec", 6, 1, 7, 40)
    assert command in (ckdir / "where" / "README.md").read_text()


def test_the_form_starts_with_a_quick_trec_run(ckdir):
    at = visit(app(), "app_pages/training.py")
    assert at.selectbox(key="train-task").value == "trec" and at.number_input(key="train-epochs").value == 5
    assert at.selectbox(key="train-optimizer").value == "adam" and at.number_input(key="train-lr").value == 0.001


def test_the_timeline_grows_and_the_whole_run_has_an_eta_while_it_runs(ckdir):
    at = visit(app(), "app_pages/training.py")
    fill(at, "live", epochs=200, cap=300, long=True)
    wait(at, lambda a: len(a.get("plotly_chart")) >= 2 and "running" in status(a))  # curves and a timeline
    assert "Attention timeline" in texts(at.subheader)
    bar = at.get("progress")[0].text
    assert "/200" in bar and "left in the run" in bar, bar
    assert "train loss" in bar and "train accuracy" in bar  # beside the sidebar's test figures: named as training
    at.button(key="train-stop").click().run()
    wait(at, lambda a: "stopped" in status(a) or "done" in status(a) or "failed" in status(a))


def epoch_shown(at) -> int:
    bars = at.get("progress")
    found = re.search(r"epoch (\d+)/", bars[0].text) if bars else None
    return int(found.group(1)) if found else 0


def test_stop_keeps_the_best_checkpoint_and_resume_goes_on_from_the_last_epoch(ckdir):
    at = visit(app(), "app_pages/training.py")
    fill(at, "stop-me", epochs=200, cap=300, long=True)
    wait(at, lambda a: len(a.get("plotly_chart")) > 0 and "running" in status(a))  # an epoch has ended
    at.button(key="train-stop").click().run()
    wait(at, lambda a: "stopped" in status(a) or "done" in status(a) or "failed" in status(a))
    assert status(at) == "Job stop-me: stopped"
    assert (ckdir / "stop-me" / "model.safetensors").exists()
    first = json.loads((ckdir / "stop-me" / "metrics.json").read_text())["history"]

    at.button(key="train-resume").click().run()
    wait(at, lambda a: "running" in status(a) and epoch_shown(a) > len(first) + 1)
    at.button(key="train-stop").click().run()
    wait(at, lambda a: "stopped" in status(a) or "done" in status(a) or "failed" in status(a))
    history = json.loads((ckdir / "stop-me" / "metrics.json").read_text())["history"]
    assert len(history) > len(first) and history[:len(first)] == first  # continued, not restarted
    assert [h["epoch"] for h in history] == list(range(1, len(history) + 1))


def test_one_job_per_server(ckdir):
    first = visit(app(), "app_pages/training.py")
    fill(first, "first", epochs=200, cap=300, long=True)
    second = visit(app(), "app_pages/training.py")
    fill(second, "second")
    assert "is running" in texts(second.warning)
    first.button(key="train-stop").click().run()
    wait(first, lambda a: not any(w in status(a) for w in ("running", "starting")))
    assert not (ckdir / "second").exists()


def test_a_failing_job_shows_its_error_and_the_app_stays_up(ckdir):
    at = visit(app(), "app_pages/training.py")
    fill(at, "broken", vectors=str(ckdir / "no-such-vectors.txt"))
    wait(at, lambda a: "failed" in status(a) or "done" in status(a))
    assert "failed" in status(at) and "no-such-vectors.txt" in texts(at.error)
    visit(at, "app_pages/models.py")


def test_chosen_items_of_the_authors_recipe_win_over_the_fields_and_reach_the_model_card(ckdir):
    at = visit(app(), "app_pages/training.py")
    at.multiselect(key="train-recipe").set_value([3, 5, 7])
    fill(at, "recipe", d_h=6)
    wait(at, lambda a: "done" in status(a) or "failed" in status(a))
    assert status(at) == "Job recipe: done", texts(at.error)
    cfg = parse_command_line(json.loads((ckdir / "recipe" / "config.json").read_text())["train_config"]["command"])
    assert (cfg.rho, cfg.eps, cfg.dropout, cfg.weight_decay, cfg.decay_attention) == (0.95, 1e-8, 0.3, 1e-4, False)
    assert cfg.tokens == "spacy" and cfg.patience == 3  # items not chosen keep the fields' values
    assert "the authors' recipe: items 3, 5, 7 of 9" in (ckdir / "recipe" / "README.md").read_text()
