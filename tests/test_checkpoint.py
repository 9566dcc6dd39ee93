import builtins
import json
import os
import pickle
import sys
from pathlib import Path

import pandas as pd
import pytest
import safetensors.torch
import torch

import disan
from disan.inspect import catalog
from disan.nn import checkpoint, device
from disan.nn.baselines import ENCODERS
from disan.nn.checkpoint import CheckpointError

from .conftest import make_model

pytestmark = pytest.mark.quick


def test_round_trip_keeps_weights_config_and_card(make_checkpoint):
    path = make_checkpoint("pair")
    model, vocab, config, metrics = checkpoint.load(path)
    original, _ = make_model("pair")
    for (k, a), (_, b) in zip(original.state_dict().items(), model.state_dict().items()):
        assert torch.equal(a, b), k
    assert config["kind"] == "pair" and config["version"] == checkpoint.VERSION
    assert metrics["test"]["accuracy"] == 0.5 and checkpoint.card(path).startswith("# tiny")
    assert sorted(os.listdir(path)) == sorted([checkpoint.WEIGHTS, checkpoint.CONFIG, checkpoint.VOCAB,
                                               checkpoint.METRICS, checkpoint.CARD])


def test_missing_and_foreign_checkpoints_explain_themselves(make_checkpoint, tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint"):
        checkpoint.load(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="config.json is missing"):
        checkpoint.load(tmp_path / "empty")
    path = make_checkpoint()
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "format": "something-else"}))
    with pytest.raises(CheckpointError, match="not a DiSAN Explorer checkpoint"):
        checkpoint.load(path)
    (path / "config.json").write_text(json.dumps({**config, "version": 99}))
    with pytest.raises(CheckpointError, match="version 99"):
        checkpoint.load(path)
    (path / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        checkpoint.load(path)


def test_truncated_weights_and_wrong_shapes_are_reported(make_checkpoint):
    path = make_checkpoint()
    weights = path / checkpoint.WEIGHTS
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        checkpoint.load(path)
    path = make_checkpoint(name="shapes")
    config = json.loads((path / "config.json").read_text())
    config["model"]["encoder_cfg"]["d_h"] = 7
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="shape"):
        checkpoint.load(path)
    (path / checkpoint.WEIGHTS).unlink()
    with pytest.raises(CheckpointError, match="missing"):
        checkpoint.load(path)


class _Payload:
    """Unpickling this creates a file: proof that something was unpickled."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_pickles_are_never_unpickled(make_checkpoint, tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(str(marker)))
    pickle_dir = tmp_path / "pickles"
    pickle_dir.mkdir()
    for name in ("model.pt", "pytorch_model.bin", "model.pkl"):
        (pickle_dir / name).write_bytes(payload)
    with pytest.raises(CheckpointError):
        checkpoint.load(pickle_dir)
    path = make_checkpoint()
    (path / checkpoint.WEIGHTS).write_bytes(payload)  # a pickle disguised as the weights file
    with pytest.raises(CheckpointError):
        checkpoint.load(path)
    assert not marker.exists()


def test_interrupted_swap_leaves_a_loadable_checkpoint(make_checkpoint, monkeypatch):
    path = make_checkpoint()
    model, vocab = make_model("classify", seed=1)
    real_rename = os.rename
    calls = []

    def crash_on_second_rename(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # the old checkpoint is moved aside; the new one is not yet in place
            raise OSError("disk gone")
        real_rename(src, dst)

    monkeypatch.setattr(os, "rename", crash_on_second_rename)
    with pytest.raises(OSError):
        checkpoint.save(path, model, vocab, {"task": "t", "kind": "classify", "labels": ["a", "b", "c"]})
    monkeypatch.setattr(os, "rename", real_rename)
    assert not path.exists()
    loaded, *_ = checkpoint.load(path)  # falls back to the previous checkpoint
    original, _ = make_model("classify", seed=0)
    assert torch.equal(loaded.encoder.fw.w1.weight, original.encoder.fw.w1.weight)


@pytest.mark.parametrize("old,kernel", [("fast", "auto"), ("dense", "dense")])
def test_configs_that_name_the_attention_still_load(make_checkpoint, old, kernel):
    """Checkpoints written before DiSANConfig.kernel say "attention": "fast" or "dense"."""
    path = make_checkpoint()
    config = json.loads((path / checkpoint.CONFIG).read_text())
    encoder = config["model"]["encoder_cfg"]
    del encoder["kernel"]
    encoder["attention"] = old
    (path / checkpoint.CONFIG).write_text(json.dumps(config))
    model, *_ = checkpoint.load(path)
    assert model.cfg.encoder_cfg.kernel == kernel and model.encoder.fw.kernel == kernel


def test_the_shipped_checkpoints_load():
    root = Path(__file__).parents[1] / "checkpoints"
    shipped = sorted(p for p in root.glob("*") if (p / checkpoint.CONFIG).is_file())
    if not shipped:
        pytest.skip("no checkpoints in this checkout")
    for path in shipped:
        model, *_ = checkpoint.load(path)
        assert model.cfg.encoder_cfg.kernel == "auto", path


def test_load_overrides_the_kernel(make_checkpoint):
    path = make_checkpoint()
    model, *_ = checkpoint.load(path, kernel="eager")
    assert model.cfg.encoder_cfg.kernel == "eager" and model.encoder.bw.kernel == "eager"
    with pytest.raises(ValueError, match="kernel must be one of"):
        checkpoint.load(path, kernel="fast")


def listed(path):
    """The catalog's entry for the checkpoint directory ``path``."""
    return next(e for e in catalog.list_checkpoints(path.parent) if e.name == path.name)


@pytest.mark.parametrize("damage", ["truncate", "pad", "header", "empty"])
def test_listing_reads_the_weights_header_and_refuses_a_damaged_file(make_checkpoint, damage):
    path = make_checkpoint()
    weights = path / checkpoint.WEIGHTS
    data = weights.read_bytes()
    damaged = {"truncate": data[:-7], "pad": data + b"\0" * 16, "empty": b"",
               "header": (20).to_bytes(8, "little") + b"{not a json header} " + data[28:]}[damage]
    weights.write_bytes(damaged)
    entry = listed(path)
    assert not entry.ok and "corrupt or truncated" in entry.error
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        checkpoint.load(path)


def test_listing_checks_the_shapes_against_the_config(make_checkpoint):
    path = make_checkpoint()
    config = json.loads((path / "config.json").read_text())
    config["model"]["encoder_cfg"]["d_h"] = 7
    (path / "config.json").write_text(json.dumps(config))
    entry = listed(path)
    assert not entry.ok and "encoder.fw.w1.weight has shape (5, 5), expected (7, 7)" in entry.error


def test_listing_and_loading_agree_about_metrics(make_checkpoint):
    path = make_checkpoint()
    (path / checkpoint.METRICS).unlink()
    assert listed(path).ok and listed(path).headline == ""
    assert checkpoint.load(path)[3] == {}
    (path / checkpoint.METRICS).write_text("[1, 2")
    assert "metrics.json is not valid JSON" in listed(path).error
    with pytest.raises(CheckpointError, match="metrics.json is not valid JSON"):
        checkpoint.load(path)


def test_a_whole_checkpoint_is_listed_with_what_it_is(make_checkpoint):
    entry = listed(make_checkpoint("pair"))
    assert entry.ok and (entry.kind, entry.encoder, entry.headline) == ("pair", "disan", "test accuracy 0.500")
    # the picker's short label keeps the split: the Training page beside it shows train and dev figures
    assert entry.short_label == f"{entry.name} — test acc. 0.500"


def test_a_run_still_training_is_listed_with_its_dev_figure_so_far(make_checkpoint):
    path = make_checkpoint("pair")
    metrics = json.loads((path / checkpoint.METRICS).read_text())
    del metrics["test"]
    metrics["dev"] = {"accuracy": 0.4567}
    (path / checkpoint.METRICS).write_text(json.dumps(metrics))
    entry = listed(path)
    assert entry.headline == "training, dev accuracy 0.457 so far"
    assert entry.short_label == f"{path.name} — training" and "test" not in entry.label


def test_the_model_card_command_names_where_the_checkpoint_lives(make_checkpoint, tmp_path, monkeypatch):
    path = make_checkpoint(name="shipped")
    (path / checkpoint.CARD).write_text("# card\n\nReproduce:\n\n    python -m disan train --out runs/old --task sick "
                                        "--epochs 3\n\nThe run wrote runs/old.\n")
    monkeypatch.chdir(tmp_path)
    card = catalog.card(listed(path))
    assert "    python -m disan train --out shipped --task sick --epochs 3\n" in card
    assert card.endswith("The run wrote runs/old.")  # prose is left alone
    monkeypatch.chdir(tmp_path.parent)
    assert f"--out {tmp_path.name}/shipped --task" in catalog.card(listed(path))


def test_the_fingerprint_changes_when_a_checkpoint_is_rewritten(make_checkpoint):
    path = make_checkpoint()
    before = catalog.fingerprint(path.parent)
    assert catalog.fingerprint(path.parent) == before
    weights = path / checkpoint.WEIGHTS
    weights.write_bytes(weights.read_bytes()[:-1])
    assert catalog.fingerprint(path.parent) != before


def test_the_runs_table_times_epochs_and_leaves_step_budgets_blank(make_checkpoint):
    # a run evaluated every N steps records the seconds of each period, not of epochs
    by_epoch, by_steps = make_checkpoint(name="by-epoch"), make_checkpoint(name="by-steps")
    for path, history in ((by_epoch, [{"epoch_seconds": 10.0}, {"epoch_seconds": 20.0}]),
                          (by_steps, [{"seconds": 5.0, "step": 1000}])):
        metrics = json.loads((path / "metrics.json").read_text())
        (path / "metrics.json").write_text(json.dumps({**metrics, "history": history}))
    table = catalog.runs_table(catalog.list_checkpoints(by_epoch.parent)).set_index("checkpoint")
    assert table.loc["by-epoch", "s / epoch"] == 15.0
    assert pd.isna(table.loc["by-steps", "s / epoch"]) and table.loc["by-steps", "epochs"] == 1


class WeightReads:
    """Every opening of one weights file while installed (by Python's open or by the safetensors library's own),
    and the bytes read from each."""

    def __init__(self, monkeypatch, weights):
        self.weights, self.opened, self.library_opens = Path(weights).resolve(), [], 0
        real_open, real_safe_open = builtins.open, safetensors.torch.safe_open

        def counting_open(file, *args, **kwargs):
            f = real_open(file, *args, **kwargs)
            if isinstance(file, (str, os.PathLike)) and Path(file).resolve() == self.weights:
                self.opened.append([])
                return CountedFile(f, self.opened[-1])
            return f

        def counting_safe_open(file, *args, **kwargs):
            if Path(file).resolve() == self.weights:
                self.library_opens += 1
            return real_safe_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", counting_open)
        monkeypatch.setattr(safetensors.torch, "safe_open", counting_safe_open)


class CountedFile:
    """A file whose reads are recorded (their lengths) in ``reads``."""

    def __init__(self, f, reads):
        self.f, self.reads = f, reads

    def read(self, n=-1):
        data = self.f.read(n)
        self.reads.append(len(data))
        return data

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


@pytest.mark.parametrize("load", [checkpoint.load, disan.load], ids=["checkpoint.load", "disan.load"])
def test_a_load_opens_and_reads_the_weights_file_once(make_checkpoint, monkeypatch, load):
    path = make_checkpoint()
    weights = path / checkpoint.WEIGHTS
    reads = WeightReads(monkeypatch, weights)
    load(path)
    assert reads.library_opens == 0 and len(reads.opened) == 1
    assert sum(reads.opened[0]) == weights.stat().st_size  # the whole file, no byte of it twice


def test_listing_reads_the_weights_header_and_no_tensor_data(make_checkpoint, monkeypatch):
    path = make_checkpoint()
    weights = path / checkpoint.WEIGHTS
    header_bytes = 8 + int.from_bytes(weights.read_bytes()[:8], "little")
    assert header_bytes < weights.stat().st_size  # the tiny model has tensor data to leave unread
    reads = WeightReads(monkeypatch, weights)
    assert listed(path).ok
    assert reads.library_opens == 0 and len(reads.opened) == 1 and sum(reads.opened[0]) == header_bytes


def test_a_load_resolves_the_device_once(make_checkpoint, monkeypatch):
    path = make_checkpoint()
    calls = []
    real = device.resolve_device

    def counting(name="auto"):
        calls.append(name)
        return real(name)

    # every module that took the function by name, wherever a load might call it from
    for module in [m for name, m in sys.modules.items() if name == "disan" or name.startswith("disan.")]:
        if getattr(module, "resolve_device", None) is real:
            monkeypatch.setattr(module, "resolve_device", counting)
    disan.load(path, device="cpu")
    assert calls == ["cpu"]
    checkpoint.load(path, device="auto")
    assert calls == ["cpu", "auto"]


def safetensors_file(header: dict, data_bytes: int) -> bytes:
    """A safetensors file: the header's length, the header as JSON, then ``data_bytes`` zero bytes."""
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + bytes(data_bytes)


F32 = {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}
REFUSED_HEADERS = {  # (header, bytes of data): files the safetensors library refuses although their length adds up
    "gap": ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
             "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}, 16),
    "overlap": ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                 "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]},
                 "c": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}}, 16),
    "not from the start": ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [4, 16]}}, 16),
    "float size": ({"a": {**F32, "shape": [4.0]}}, 16),
    "bool size": ({"a": {**F32, "shape": [True], "data_offsets": [0, 4]}}, 4),
    "number in metadata": ({"__metadata__": {"step": 1}, "a": F32}, 16),
    "NaN": ({"a": {**F32, "note": float("nan")}}, 16),
}


@pytest.mark.parametrize("damage", REFUSED_HEADERS)
def test_a_header_the_library_refuses_is_refused_by_the_listing_too(make_checkpoint, damage):
    """What the picker offers loads: the header checks refuse every file the safetensors library refuses."""
    data = safetensors_file(*REFUSED_HEADERS[damage])
    with pytest.raises(safetensors.SafetensorError):
        safetensors.torch.load(data)
    path = make_checkpoint()
    (path / checkpoint.WEIGHTS).write_bytes(data)
    entry = listed(path)
    assert not entry.ok and "corrupt or truncated" in entry.error
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        checkpoint.load(path)


# multihead splits 2 d_h over 8 heads, which the tiny test model's d_h = 5 does not allow
@pytest.mark.parametrize("encoder", sorted(set(ENCODERS) - {"multihead"}))
def test_every_encoder_loads_as_it_was_saved(make_checkpoint, encoder):
    """The loaded weights are the model's own (an LSTM's flat weights included): the same outputs."""
    model, vocab = make_model("classify", encoder)
    loaded, *_ = checkpoint.load(make_checkpoint("classify", encoder=encoder))
    assert all(p.device.type == "cpu" for p in loaded.state_dict().values())
    ids = torch.tensor([vocab.encode("the glass bottle is big".split()), vocab.encode("a man pouring tea x".split())])
    assert torch.equal(loaded(ids), model(ids))
