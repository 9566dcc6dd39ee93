"""Training on tiny slices: the loss falls, the best checkpoint round-trips, the CLI evaluates it;
relatedness selection with NaN Pearson; the job registry's probe snapshots and crashed children."""
import io
import json
import math
import os
import signal
import time

import pytest

import disan
from disan.__main__ import main, run
from disan.training import train as train_module
from disan.training.jobs import Registry
from disan.training.probe import snapshot
from disan.training.train import TrainConfig, improves, train

from .conftest import make_model


@pytest.fixture(scope="module")
def trained(data_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "trec-tiny"
    events = []
    cfg = TrainConfig(task="trec", out=str(out), epochs=4, patience=10, d_h=16, d_fc=16, max_train=192,
                      batch_size=32, extra_vocab=100, lr=1.0)
    metrics = train(cfg, progress=events.append)
    return cfg, metrics, events


def test_loss_falls_and_events_report_progress(trained):
    _, metrics, events = trained
    losses = [h["train_loss"] for h in metrics["history"]]
    assert losses[-1] < losses[0]
    steps = [e for e in events if e["event"] == "step"]
    assert steps[-1]["step"] == steps[-1]["steps"] == 6 and steps[-1]["eta"] == 0
    assert [e["epoch"] for e in events if e["event"] == "epoch"] == [1, 2, 3, 4]


def test_best_dev_checkpoint_is_kept_and_evaluated_on_test(trained, capsys):
    cfg, metrics, _ = trained
    best = max(metrics["history"], key=lambda h: h["dev_accuracy"])
    assert metrics["best_epoch"] == best["epoch"]
    assert metrics["dev"]["accuracy"] == pytest.approx(best["dev_accuracy"])
    pipe = disan.load(cfg.out)
    assert pipe.labels == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"] and pipe.task == "trec"
    assert main(["evaluate", cfg.out, "--split", "test", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["accuracy"] == pytest.approx(metrics["test"]["accuracy"]) and printed["n"] == 500
    card = (pipe.path / "README.md").read_text()
    assert "trec" in card and "TREC/TREC_10.label" in card and "Reproduce" in card


@pytest.mark.usefixtures("data_root")
def test_stop_request_keeps_the_best_checkpoint(tmp_path):
    out = tmp_path / "stopped"
    epochs_seen = []

    def stop_after_first_epoch():
        return len(epochs_seen) >= 1

    cfg = TrainConfig(task="trec", out=str(out), epochs=5, d_h=8, d_fc=8, max_train=64, batch_size=32,
                      extra_vocab=0)
    metrics = train(cfg, progress=lambda e: e["event"] == "epoch" and epochs_seen.append(e),
                    should_stop=stop_after_first_epoch)
    assert metrics["stopped"] and metrics["best_epoch"] == 1
    assert disan.load(out).predict(["What is a dog ?"])[0].label in disan.load(out).labels


def test_bad_hyperparameters_are_refused():
    with pytest.raises(ValueError, match="learning rate"):
        TrainConfig(lr=float("nan"))
    with pytest.raises(ValueError, match="optimizer"):
        TrainConfig(optimizer="sgd-with-momentum")
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="unknown"):
        train(TrainConfig(task="nope", out="/tmp/never"))


def tiny_sick(out, epochs=2) -> TrainConfig:
    return TrainConfig(task="sick", out=str(out), epochs=epochs, patience=10, d_h=8, d_fc=8, max_train=64,
                       batch_size=32, extra_vocab=0)


@pytest.mark.usefixtures("data_root")
def test_relatedness_end_to_end(tmp_path):
    out = tmp_path / "sick"
    metrics = train(tiny_sick(out), log=io.StringIO())
    saved = json.loads((out / "metrics.json").read_text())
    assert math.isfinite(saved["dev"]["pearson"]) and math.isfinite(saved["test"]["pearson"])
    assert saved["test"]["n"] == 4927 and saved["test"]["pearson"] == pytest.approx(metrics["test"]["pearson"])
    pipe = disan.load(out)
    assert pipe.kind == "relatedness" and pipe.task == "sick"
    score = pipe.predict([("A man is playing a guitar", "A person plays an instrument")])[0].score
    assert 1 <= score <= 5


def test_nan_never_improves():
    nan = float("nan")
    assert improves(0.2, -math.inf) and improves(0.3, 0.2)
    assert not improves(nan, -math.inf) and not improves(nan, 0.2) and not improves(0.2, 0.2)


def nan_pearson_in_epochs(monkeypatch, epochs: set[int]) -> None:
    """Make the dev Pearson of the given epochs NaN, as a model predicting one constant score gets."""
    real, calls = train_module.evaluate, []

    def evaluate(model, data):
        metrics = real(model, data)
        calls.append(1)  # the loop evaluates dev once per epoch, so call k is epoch k
        return {**metrics, "pearson": float("nan")} if len(calls) in epochs else metrics
    monkeypatch.setattr(train_module, "evaluate", evaluate)


@pytest.mark.usefixtures("data_root")
@pytest.mark.parametrize("nan_epoch,best_epoch", [(2, 1), (1, 2)])
def test_a_nan_dev_pearson_is_never_an_improvement(nan_epoch, best_epoch, tmp_path, monkeypatch):
    nan_pearson_in_epochs(monkeypatch, {nan_epoch})
    events = []
    metrics = train(tiny_sick(tmp_path / "sick"), progress=events.append, log=io.StringIO())
    history = metrics["history"]
    assert math.isnan(history[nan_epoch - 1]["dev_pearson"])
    assert [e["improved"] for e in events if e["event"] == "epoch"] == [e == best_epoch for e in (1, 2)]
    # the checkpoint holds the finite epoch's weights: evaluated again, it gives that epoch's Pearson
    assert metrics["best_epoch"] == best_epoch
    assert metrics["dev"]["pearson"] == pytest.approx(history[best_epoch - 1]["dev_pearson"])


@pytest.mark.usefixtures("data_root")
def test_a_run_whose_every_dev_pearson_is_nan_ends_with_a_message(tmp_path, monkeypatch, capsys):
    nan_pearson_in_epochs(monkeypatch, set(range(1, 100)))
    with pytest.raises(ValueError, match="dev pearson was not a number in any of the 2 epochs"):
        train(tiny_sick(tmp_path / "sick"), log=io.StringIO())
    assert not (tmp_path / "sick").exists()
    assert run(["train", "--task", "sick", "--out", str(tmp_path / "cli"), "--epochs", "2", "--d-h", "8",
                "--max-train", "64", "--extra-vocab", "0"]) == 1
    assert "error: no checkpoint was written: the dev pearson was not a number" in capsys.readouterr().err


def test_the_probe_snapshot_traces_the_model_and_restores_its_mode():
    model, vocab = make_model()
    model.train()
    snap = snapshot(model, vocab, "The glass bottle is big", 3)
    assert snap.epoch == 3 and snap.tokens == ["The", "glass", "bottle", "is", "big"]
    assert snap.names == ("forward", "backward")
    assert [a.shape for a in snap.attention] == [(5, 5), (5, 5)]
    # the forward block's mask: j attends i < j only
    assert snap.masks[0].tolist() == [[i < j for i in range(5)] for j in range(5)]
    assert model.training
    assert snapshot(model, vocab, "   ", 1) is None  # nothing to trace
    bilstm, vocab = make_model(encoder="bilstm")
    assert snapshot(bilstm, vocab, "The glass", 1) is None  # no DiSA blocks


def test_a_child_that_dies_without_a_word_fails_the_job_with_its_exit_code(tmp_path):
    job = Registry().start("doomed", TrainConfig(task="trec", out=str(tmp_path / "doomed"), epochs=200))
    os.kill(job._process.pid, signal.SIGKILL)  # at once: the child is still starting and has reported nothing
    deadline = time.time() + 60
    while job.poll().active and time.time() < deadline:
        time.sleep(0.1)
    assert job.status == "failed"
    assert f"exit code {-signal.SIGKILL}" in job.error
    assert not (tmp_path / "doomed").exists()
