"""Training on tiny slices: the loss falls, the best checkpoint round-trips, the CLI evaluates it."""
import json

import pytest

import disan
from disan.__main__ import main
from disan.training.jobs import _snapshot
from disan.training.train import TrainConfig, train

from .conftest import make_model


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
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


def test_the_probe_snapshot_traces_the_model_and_restores_its_mode():
    model, vocab = make_model()
    model.train()
    snap = _snapshot({"epoch": 3, "model": model, "vocab": vocab}, "The glass bottle is big")
    assert snap.epoch == 3 and snap.tokens == ["The", "glass", "bottle", "is", "big"]
    assert snap.forward.shape == snap.backward.shape == (5, 5) and snap.directions == ("forward", "backward")
    assert model.training
    assert _snapshot({"epoch": 1, "model": model, "vocab": vocab}, "   ") is None  # nothing to trace
    bilstm, vocab = make_model(encoder="bilstm")
    assert _snapshot({"epoch": 1, "model": bilstm, "vocab": vocab}, "The glass") is None  # no DiSA blocks
