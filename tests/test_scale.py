"""Training in several processes with torchrun (gloo on loopback), compared with one process; the
processes' shares of the batches; TensorBoard event files read back."""
import json
import os
import random
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from disan.data.batching import batch_indices, encode
from disan.data.text import Vocab
from disan.training.board import LOGDIR_ENV, Board, attention_image, logdir
from disan.training.config import parse_args
from disan.training.distributed import World
from disan.training.train import TrainConfig, train

REPO = Path(__file__).resolve().parent.parent
# Dropout 0: the runs differ only in how each step's gradient is summed. A global batch of 63 splits
# unevenly into 32 + 31 examples (and the last batch of 256 examples, 4, into 2 + 2), so the test also
# covers the weighting that makes the average of unequal shares the global batch's mean.
FLAGS = ["--task", "trec", "--max-train", "256", "--d-h", "8", "--d-fc", "8", "--epochs", "2", "--extra-vocab", "0",
         "--dropout", "0", "--patience", "5", "--batch-size", "63"]
TOLERANCE = 1e-5  # on every weight after 2 epochs, float32; measured: 2.4e-7


def test_the_world_comes_from_torchruns_environment():
    assert World.from_env() == World()  # pytest runs without torchrun
    world = World.from_env("auto", {"RANK": "1", "WORLD_SIZE": "3", "LOCAL_RANK": "1"})
    assert (world.rank, world.size, world.local_rank, world.distributed, world.is_main) == (1, 3, 1, True, False)
    assert world.device == torch.device("cpu" if not torch.cuda.is_available() else "cuda:1")
    assert not World.from_env("cpu", {"RANK": "0", "WORLD_SIZE": "1"}).distributed
    with pytest.raises(ValueError, match="torchrun"):
        World.from_env("cpu", {"WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="outside"):
        World.from_env("cpu", {"RANK": "2", "WORLD_SIZE": "2"})


@pytest.mark.quick
def test_every_process_gets_a_disjoint_share_of_the_same_global_batches():
    vocab = Vocab.build([["a", "b", "c"]])
    data = encode(vocab, [[["a"] * (1 + i % 7)] for i in range(203)], [0] * 203)
    chunks = batch_indices(data, 64, True, random.Random(5))
    assert chunks == batch_indices(data, 64, True, random.Random(5))  # same seed, same batches in every process
    for chunk in chunks:
        shares = [World(rank, 3).share(chunk) for rank in range(3)]
        assert sorted(i for s in shares for i in s) == sorted(chunk)
        assert max(map(len, shares)) - min(map(len, shares)) <= 1


def test_the_global_batch_must_feed_every_process(monkeypatch):
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "4")
    with pytest.raises(ValueError, match="at least the 4 processes"):
        train(TrainConfig(task="trec", out="/tmp/never", batch_size=2, device="cpu"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def one_process(data_root, tmp_path_factory):
    """The reference: one process, the same flags; its event files go to the default folder under $DISAN_LOGDIR."""
    out = tmp_path_factory.mktemp("one") / "trec-one"
    with open(os.devnull, "w") as log:
        metrics = train(parse_args(FLAGS + ["--out", str(out)]), log=log)
    return out, metrics


@pytest.fixture(scope="module")
def two_processes(data_root, tmp_path_factory):
    """The same run in two processes started by torchrun, talking over loopback."""
    root = tmp_path_factory.mktemp("two")
    out, logdir = root / "trec-two", root / "events"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), "-m", "disan", "train", *FLAGS, "--out", str(out),
               "--logdir", str(logdir), "--threads", "1"]  # two processes on two cores
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, logdir, done.stdout


def weights(path: Path) -> dict:
    return load_file(str(path / "model.safetensors"))


def test_two_processes_train_the_same_model_as_one(one_process, two_processes):
    one, one_metrics = one_process
    two, _, _ = two_processes
    two_metrics = json.loads((two / "metrics.json").read_text())
    for a, b in zip(one_metrics["history"], two_metrics["history"]):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5)
        assert b["train_accuracy"] == a["train_accuracy"] and b["dev_accuracy"] == a["dev_accuracy"]
    assert two_metrics["best_epoch"] == one_metrics["best_epoch"]
    assert two_metrics["test"]["accuracy"] == one_metrics["test"]["accuracy"]
    w1, w2 = weights(one), weights(two)
    assert w1.keys() == w2.keys()
    worst = max(float((w1[k] - w2[k]).abs().max()) for k in w1)
    assert worst < TOLERANCE, f"the weights differ by up to {worst:.2e}"


def test_only_the_first_process_writes_and_the_world_size_is_recorded(two_processes):
    out, logdir, stdout = two_processes
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    assert [line["epoch"] for line in lines if "epoch" in line] == [1, 2]  # one JSON line per epoch, not two
    assert sum("checkpoint" in line for line in lines) == 1
    assert len(list(logdir.glob("events.out.tfevents.*"))) == 1
    # no .tmp or .prev left over; one state file for --resume, from the first process alone
    assert sorted(p.name for p in out.parent.iterdir()) == ["events", "trec-two", "trec-two.resume.pt"]
    config = json.loads((out / "config.json").read_text())
    assert config["train_config"]["world_size"] == 2
    assert "2 processes" in json.loads((out / "metrics.json").read_text())["machine"]
    assert "torchrun --nproc_per_node 2 -m disan train --task trec" in (out / "README.md").read_text()


def test_one_process_records_world_size_1_and_its_device(one_process):
    out, metrics = one_process
    assert json.loads((out / "config.json").read_text())["train_config"]["world_size"] == 1
    assert metrics["machine"].endswith(", cpu" if not torch.cuda.is_available() else ")")
    assert "python -m disan train --task trec" in (out / "README.md").read_text()


def test_tensorboard_has_every_epochs_figures_and_the_probes_attention(one_process):
    out, metrics = one_process
    events = Path(os.environ[LOGDIR_ENV]) / out.name  # the default folder: $DISAN_LOGDIR/<name of --out>
    acc = EventAccumulator(str(events), size_guidance={"images": 0, "scalars": 0})
    acc.Reload()
    tags = acc.Tags()
    per_epoch = {"train/loss", "train/accuracy", "train/learning_rate", "epoch/seconds", "dev/accuracy"}
    assert per_epoch | {"test/accuracy"} <= set(tags["scalars"])
    for tag in per_epoch:
        assert [e.step for e in acc.Scalars(tag)] == [1, 2], tag
    assert [e.value for e in acc.Scalars("train/loss")] == pytest.approx([h["train_loss"] for h in metrics["history"]])
    assert acc.Scalars("train/learning_rate")[0].value == pytest.approx(0.5)
    test = acc.Scalars("test/accuracy")
    assert [e.step for e in test] == [metrics["best_epoch"]]
    assert test[0].value == pytest.approx(metrics["test"]["accuracy"])
    assert {"attention/forward", "attention/backward"} <= set(tags["images"])
    image = acc.Images("attention/forward")
    assert [e.step for e in image] == [1, 2] and image[0].width == image[0].height >= 160


def test_the_attention_image_is_the_matrix_scaled_to_its_largest_weight():
    probs = torch.tensor([[1.0, 0.0], [0.25, 0.5]]).numpy()
    image = attention_image(probs)
    assert image.shape == (1, 160, 160) and float(image.max()) == 1.0
    assert float(image[0, 100, 100]) == 0.5 and float(image[0, 100, 0]) == 0.25 and float(image[0, 0, 100]) == 0.0


def test_the_event_folder_defaults_to_the_checkouts_runs_tensorboard_and_stays_out_of_the_checkpoint(monkeypatch,
                                                                                                       tmp_path):
    monkeypatch.delenv(LOGDIR_ENV)
    monkeypatch.chdir(tmp_path)  # the checkout's folder, not the working directory's
    checkout = Path(__file__).resolve().parents[1]
    assert logdir(TrainConfig(task="trec", out="runs/trec-bilstm")) == checkout / "runs/tensorboard/trec-bilstm"
    assert logdir(TrainConfig(task="trec", out="x", logdir="/tb/x")) == Path("/tb/x")
    for inside in ("ck", "ck/events"):
        with pytest.raises(ValueError, match="inside the checkpoint folder"):
            Board(TrainConfig(task="trec", out=str(tmp_path / "ck"), logdir=str(tmp_path / inside)))
    assert Board(TrainConfig(task="trec", out=str(tmp_path / "ck"), logdir=str(tmp_path / "ck"),
                             tensorboard=False)).writer is None
