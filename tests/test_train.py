"""Training on tiny slices: the loss falls, the best checkpoint round-trips, the CLI evaluates it;
relatedness selection with NaN Pearson; the job registry's probe snapshots and crashed children."""
import io
import json
import math
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

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
    assert [e["done"] for e in steps] == list(range(1, 25)) and {e["budget"] for e in steps} == {24}
    # the time left is estimated only from the steps after the warm-up ones, in every epoch
    assert [e["eta"] is None for e in steps[:6]] == [True] * 3 + [False] * 3
    assert all(e["eta"] >= 0 for e in steps if e["step"] > 3)
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
    # the data checksums as a Markdown table, one row per file, not as JSON
    rows = [line for line in card.splitlines() if line.startswith("| TREC/")]
    assert len(rows) == len(metrics["data_sha256"]) and "{" not in card.split("data file")[1]
    assert all(f"`{metrics['data_sha256'][row.split(' | ')[0][2:]]}`" in row for row in rows)


def test_the_machine_names_its_threads_in_the_right_number(monkeypatch):
    world = SimpleNamespace(distributed=False, size=1, device=torch.device("cpu"))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert ", 1 thread, " in train_module.machine(world)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert ", 4 threads, " in train_module.machine(world)


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


@pytest.mark.usefixtures("data_root")
def test_a_checkpoint_of_a_run_still_training_has_a_card_that_says_so(tmp_path):
    out = tmp_path / "running"
    cards = []  # (the epoch event, the card on disk at that moment) for each improvement

    def look(event):
        if event["event"] == "epoch" and event["improved"]:
            cards.append((event, (out / "README.md").read_text()))

    cfg = TrainConfig(task="trec", out=str(out), epochs=3, patience=0, d_h=8, d_fc=8, max_train=64, batch_size=32,
                      extra_vocab=0, lr=1.0)
    metrics = train(cfg, progress=look)
    assert cards
    for event, card in cards:
        assert "training in progress" in card and f"from epoch {event['epoch']}," in card
        assert f'"accuracy": {round(event["dev_accuracy"], 4)}' in card.split("- dev:")[1].splitlines()[0]
        assert "- test: not evaluated until the run ends" in card and "Reproduce" in card
    final = (out / "README.md").read_text()
    assert "in progress" not in final
    assert f'- test: {{"accuracy": {round(metrics["test"]["accuracy"], 4)}' in final

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


@pytest.mark.quick
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


@pytest.mark.quick
def test_a_child_that_dies_without_a_word_fails_the_job_with_its_exit_code(tmp_path):
    job = Registry().start("doomed", TrainConfig(task="trec", out=str(tmp_path / "doomed"), epochs=200))
    os.kill(job._process.pid, signal.SIGKILL)  # at once: the child is still starting and has reported nothing
    deadline = time.time() + 60
    while job.poll().active and time.time() < deadline:
        time.sleep(0.1)
    assert job.status == "failed"
    assert f"exit code {-signal.SIGKILL}" in job.error
    assert not (tmp_path / "doomed").exists()


# ---------------------------------------------------------------- --resume

def tiny_trec(out, **changes) -> TrainConfig:
    settings = dict(task="trec", out=str(out), epochs=3, patience=10, d_h=8, d_fc=8, max_train=96, batch_size=32,
                    extra_vocab=20, lr=1.0)
    return TrainConfig(**{**settings, **changes})


def without_times(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in record.items() if k != "epoch_seconds"} for record in history]


@pytest.mark.usefixtures("data_root")
def test_a_run_interrupted_in_its_second_epoch_resumes_to_the_same_result(tmp_path, capsys):
    whole = train(tiny_trec(tmp_path / "whole"), log=io.StringIO())
    steps = []

    def stop_in_epoch_two():  # polled between steps: true once the first step of epoch 2 is done
        return bool(steps) and (steps[-1]["epoch"], steps[-1]["step"]) == (2, 1)

    out = tmp_path / "cut"
    first = train(tiny_trec(out), progress=lambda e: e["event"] == "step" and steps.append(e),
                  should_stop=stop_in_epoch_two, log=io.StringIO())
    assert first["stopped"] == "stopped by the user during epoch 2" and first["epochs_run"] == 2
    assert len(first["history"]) == 1  # epoch 2 never finished
    resumed = train(tiny_trec(out, resume=True), log=io.StringIO())
    assert "resuming at step 3, epoch 1" in capsys.readouterr().err
    assert without_times(resumed["history"]) == without_times(whole["history"])
    assert (resumed["best_epoch"], resumed["epochs_run"], resumed["stopped"]) == (whole["best_epoch"], 3, None)
    assert resumed["test"] == whole["test"] and resumed["dev"] == whole["dev"]
    a, b = disan.load(tmp_path / "whole").model.state_dict(), disan.load(out).model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.usefixtures("data_root")
def test_a_finished_run_resumes_with_more_epochs(tmp_path):
    short = train(tiny_trec(tmp_path / "run", epochs=2), log=io.StringIO())
    longer = train(tiny_trec(tmp_path / "run", epochs=3, resume=True), log=io.StringIO())
    whole = train(tiny_trec(tmp_path / "whole", epochs=3), log=io.StringIO())
    assert without_times(longer["history"][:2]) == without_times(short["history"])
    assert without_times(longer["history"]) == without_times(whole["history"]) and longer["test"] == whole["test"]


@pytest.mark.usefixtures("data_root")
def test_resume_refuses_other_settings_and_corrupt_state_and_starts_afresh_without_state(tmp_path, capsys):
    out = tmp_path / "run"
    train(tiny_trec(out, epochs=1), log=io.StringIO())
    with pytest.raises(ValueError, match=r"other settings \(lr=1\.0, not 0\.5\)"):
        train(tiny_trec(out, epochs=1, lr=0.5, resume=True), log=io.StringIO())
    state = train_module.state_path(tiny_trec(out))
    state.write_bytes(state.read_bytes()[:100])
    with pytest.raises(ValueError, match="cannot resume from .*run.resume.pt"):
        train(tiny_trec(out, resume=True), log=io.StringIO())
    fresh = train(tiny_trec(tmp_path / "new", epochs=1, resume=True), log=io.StringIO())
    assert "nothing to resume" in capsys.readouterr().err and len(fresh["history"]) == 1


def test_the_state_file_is_loaded_without_unpickling_code(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, ("echo unpickled",))
    path = train_module.state_path(tiny_trec(tmp_path / "run"))
    torch.save({"config": Payload()}, path)
    with pytest.raises(ValueError, match="cannot resume"):
        train_module.resume(tiny_trec(tmp_path / "run", resume=True), None, None, None, None, {})


@pytest.mark.quick
def test_the_metrics_of_a_hand_worked_example():
    import numpy as np

    from disan.training.metrics import classification_metrics, confusion, relatedness_metrics
    pred, gold = np.array([0, 2, 1, 1]), np.array([0, 1, 1, 2])
    assert classification_metrics(pred, gold) == {"accuracy": 0.5, "n": 4}
    assert confusion(pred, gold, 3).tolist() == [[1, 0, 0], [0, 1, 1], [0, 1, 0]]  # rows gold, columns predicted
    # scores 1, 2, 3 against 1, 3, 2: r = 0.5 (centred -1, 0, 1 and -1, 1, 0), the same on ranks, mse 2/3
    got = relatedness_metrics(np.array([1.0, 2.0, 3.0]), np.array([1.0, 3.0, 2.0]))
    assert got["pearson"] == pytest.approx(0.5) and got["spearman"] == pytest.approx(0.5)
    assert got["mse"] == pytest.approx(2 / 3) and got["n"] == 3
    assert math.isnan(relatedness_metrics(np.ones(3), np.array([1.0, 2.0, 3.0]))["pearson"])  # constant: undefined


@pytest.mark.quick
def test_the_probe_image_scales_to_the_largest_weight_and_repeats_each_cell(monkeypatch, tmp_path):
    import numpy as np

    from disan.training import board
    monkeypatch.setattr(board, "IMAGE_SIZE", 4)
    image = board.attention_image(np.array([[0.0, 0.5], [0.25, 0.0]]))
    # 2 tokens on at least 4 pixels: each weight a 2 x 2 square, the largest weight white
    assert image.tolist() == [[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0],
                               [0.5, 0.5, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]]]
    monkeypatch.setenv(board.LOGDIR_ENV, str(tmp_path))
    assert board.logdir(TrainConfig(task="trec", out="runs/trec-1")) == tmp_path / "trec-1"
    assert board.logdir(TrainConfig(task="trec", out="runs/trec-1", logdir="elsewhere")) == Path("elsewhere")


@pytest.mark.quick
def test_shuffled_labels_are_a_seeded_permutation_of_the_labels():
    from disan.data.loaders import Example
    examples = [Example(f"sentence {i}", i % 3) for i in range(30)]
    one, again, other = (train_module.shuffled_labels(examples, seed) for seed in (4, 4, 5))
    assert [e.text for e in one] == [e.text for e in examples]             # the texts stay where they were
    assert sorted(e.label for e in one) == sorted(e.label for e in examples)  # the same labels, permuted
    assert [e.label for e in one] == [e.label for e in again]              # seeded
    assert [e.label for e in one] != [e.label for e in other]
    assert [e.label for e in one] != [e.label for e in examples]
    assert [e.label for e in examples] == [i % 3 for i in range(30)]        # the input is left as it was
    assert TrainConfig(task="trec", out="x", shuffle_labels=True).command_line().count("--shuffle-labels") == 1
