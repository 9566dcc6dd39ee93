"""Checkpoints: a directory with weights in safetensors and everything else in JSON.

    model.safetensors   the weights (no pickle anywhere)
    config.json         format name and version, task, labels, model configuration
    vocab.json          the vocabulary
    metrics.json        dev/test figures and training facts
    README.md           a model card

Saving is atomic at the directory level: the new checkpoint is written next to the
old one and swapped in with renames, so a process killed at any moment leaves either
the old or the new checkpoint loadable (``<dir>.prev`` holds the old one during the swap,
and :func:`resolve` falls back to it).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from disan.data.text import Vocab
from disan.nn.device import resolve_device
from disan.nn.heads import ModelConfig, TextModel
from disan.nn.model import DiSANConfig

FORMAT = "disan-checkpoint"
VERSION = 1
WEIGHTS, CONFIG, VOCAB, METRICS, CARD = "model.safetensors", "config.json", "vocab.json", "metrics.json", "README.md"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message says why."""


def resolve(path: str | Path) -> Path:
    """The directory to read: ``path``, or ``path.prev`` when a save was interrupted mid-swap."""
    path = Path(path)
    if (path / CONFIG).is_file():
        return path
    prev = path.with_name(path.name + ".prev")
    if not path.exists() and (prev / CONFIG).is_file():
        return prev
    if not path.exists():
        raise CheckpointError(f"no checkpoint at {path}")
    raise CheckpointError(f"{path} is not a checkpoint: {CONFIG} is missing")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def save(path: str | Path, model: TextModel, vocab: Vocab, meta: dict, metrics: dict | None = None,
         card: str = "") -> Path:
    """Write a checkpoint directory atomically. ``meta`` holds task, labels and any other facts."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    prev = path.with_name(path.name + ".prev")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        save_file(state, str(tmp / WEIGHTS))
        with open(tmp / WEIGHTS, "rb+") as f:
            os.fsync(f.fileno())
        config = {"format": FORMAT, "version": VERSION, **meta, "model": dataclasses.asdict(model.cfg)}
        _write(tmp / CONFIG, json.dumps(config, indent=2))
        _write(tmp / VOCAB, json.dumps(vocab.to_json()))
        _write(tmp / METRICS, json.dumps(metrics or {}, indent=2))
        _write(tmp / CARD, card)
        _fsync_dir(tmp)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise OSError(e.errno, f"could not write the checkpoint {path}: {e.strerror or e}; "
                               f"the previous checkpoint is unchanged") from e
    if path.exists():
        shutil.rmtree(prev, ignore_errors=True)
        os.rename(path, prev)
    os.rename(tmp, path)
    _fsync_dir(path.parent)
    shutil.rmtree(prev, ignore_errors=True)
    return path


def read_json(path: Path, what: str) -> dict:
    """A JSON file of a checkpoint; :class:`CheckpointError` naming ``what`` when it is missing or invalid."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{what} is missing: {path}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{what} is not valid JSON ({path}): {e}") from None


def read_config(path: str | Path) -> dict:
    """The checkpoint's config.json, checked for format and version."""
    path = resolve(path)
    config = read_json(path / CONFIG, "config.json")
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a DiSAN Explorer checkpoint "
                              f"(config.json format is {config.get('format') if isinstance(config, dict) else None!r}, "
                              f"expected {FORMAT!r})")
    if config.get("version") != VERSION:
        raise CheckpointError(f"{path} has checkpoint format version {config.get('version')!r}; "
                              f"this version of DiSAN Explorer reads version {VERSION}")
    return config


def model_config(config: dict) -> ModelConfig:
    """The model configuration of a config.json; raises :class:`CheckpointError` if it is invalid."""
    try:
        fields = dict(config["model"])
        encoder = dict(fields["encoder_cfg"])
        if "attention" in encoder:
            # Checkpoints written before DiSANConfig.kernel name the path "attention": "fast" (the
            # kernel that DISAN_KERNEL picked, now "auto") or "dense" (the same name now).
            old = encoder.pop("attention")
            encoder.setdefault("kernel", "auto" if old == "fast" else old)
        fields["encoder_cfg"] = DiSANConfig(**encoder)
        return ModelConfig(**fields)
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"config.json has an invalid model configuration: {e}") from None


def load(path: str | Path, kernel: str | None = None,
         device: str | torch.device = "cpu") -> tuple[TextModel, Vocab, dict, dict]:
    """Load (model in eval mode, vocab, config, metrics) without unpickling anything.

    ``kernel`` overrides the token2token path of the checkpoint's configuration (see
    :mod:`disan.nn.kernels`: "auto", "cpp", "eager" or "dense"); the model is put on ``device``
    (a name of :func:`~disan.nn.device.resolve_device`: auto, cpu, cuda, cuda:N).
    """
    device = resolve_device(device)  # before any reading: a missing GPU is the first thing to hear of
    path = resolve(path)
    config = read_config(path)
    cfg = model_config(config)
    if kernel is not None:
        cfg.encoder_cfg = dataclasses.replace(cfg.encoder_cfg, kernel=kernel)  # validated like the rest
    try:
        vocab = Vocab.from_json(read_json(path / VOCAB, "vocab.json"))
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"vocab.json is invalid: {e}") from None
    if len(vocab) != cfg.vocab_size:
        raise CheckpointError(f"vocab.json has {len(vocab)} words but the model expects {cfg.vocab_size}")
    try:
        state = load_file(str(path / WEIGHTS))
    except FileNotFoundError:
        raise CheckpointError(f"weights are missing: {path / WEIGHTS}") from None
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{path / WEIGHTS} is corrupt or truncated: {e}") from None
    model = TextModel(cfg)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    problems = [f"missing {k}" for k in expected if k not in got]
    problems += [f"unexpected {k}" for k in got if k not in expected]
    problems += [f"{k} has shape {got[k]}, expected {expected[k]}" for k in expected if k in got and got[k] != expected[k]]
    if problems:
        raise CheckpointError("weights do not fit the configuration: " + "; ".join(problems[:5])
                              + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    model.load_state_dict(state)
    metrics = read_json(path / METRICS, "metrics.json") if (path / METRICS).exists() else {}
    return model.to(device).eval(), vocab, config, metrics


def card(path: str | Path) -> str:
    """The checkpoint's model card (Markdown), or '' when it has none."""
    path = resolve(path)
    return (path / CARD).read_text(encoding="utf-8") if (path / CARD).exists() else ""
