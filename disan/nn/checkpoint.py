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
import io
import json
import math
import os
import shutil
from pathlib import Path
from typing import BinaryIO

import torch
from safetensors import SafetensorError
from safetensors.torch import load as tensors_from_bytes
from safetensors.torch import save_file

from disan.data.paths import checkpoint_folders
from disan.data.text import Vocab
from disan.data.vectors import fingerprint, rows_beyond
from disan.nn.choices import VOCABULARIES
from disan.nn.device import resolve_device
from disan.nn.heads import ModelConfig, TextModel
from disan.nn.model import DiSANConfig

FORMAT = "disan-checkpoint"
VERSION = 1
WEIGHTS, CONFIG, VOCAB, METRICS, CARD = "model.safetensors", "config.json", "vocab.json", "metrics.json", "README.md"
# Bytes per element of the safetensors dtypes, to check each tensor's byte range against its shape.
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
               "U32": 4, "I32": 4, "F32": 4, "U64": 8, "I64": 8, "F64": 8}
MAX_HEADER = 100_000_000  # the safetensors library refuses larger headers too


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message says why."""


def names(root: Path) -> list[str]:
    """The checkpoint names under root: half-written saves (``.tmp``) are skipped, and a ``.prev`` left by an
    interrupted save stands for its checkpoint."""
    if not root.is_dir():
        return []
    return sorted({p.name.removesuffix(".prev") for p in root.iterdir()
                   if p.is_dir() and not p.name.endswith(".tmp") and not p.name.startswith(".")})


def locate(path: str | Path) -> Path:
    """The checkpoint a command, ``disan.load`` or a page names: ``path`` when it is there (or its ``.prev``
    is), else, for a bare name, the checkpoint of that name in the first of
    :func:`disan.data.paths.checkpoint_folders` that holds one (``sst5`` from any folder);
    :class:`CheckpointError` listing the names there when there is none."""
    path = Path(path)
    if path.exists() or path.with_name(path.name + ".prev").exists():
        return path
    folders = checkpoint_folders()
    if path.name == str(path) and path.name not in ("", ".", ".."):
        for folder in folders:
            if path.name in names(folder):
                return folder / path.name
    known = sorted({name for folder in folders for name in names(folder)})
    raise CheckpointError(f"no checkpoint at {path}, nor one of that name in {' or '.join(map(str, folders))}"
                          + (f"; the names there: {', '.join(known)}" if known else ""))


def resolve(path: str | Path) -> Path:
    """The directory to read of the checkpoint that :func:`locate` finds: it, or its ``.prev`` when a save
    was interrupted mid-swap."""
    path = locate(path)
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
        if "embed.frozen" in state:
            # A large vocabulary: the learned rows go at half precision too (loading widens them again),
            # which keeps a 50k-word checkpoint under 20 MB. The metrics a run records are those of
            # this stored model, which it reloads and evaluates.
            state["embed.weight"] = state["embed.weight"].half()
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


def read_config(path: Path) -> dict:
    """The config.json of a checkpoint directory (as :func:`resolve` returns it), checked for format and version."""
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


def header_shapes(f: BinaryIO, size: int, path: Path) -> dict[str, tuple[int, ...]]:
    """The tensor shapes that the safetensors header at the start of ``f`` (``size`` bytes, the file
    ``path``) declares, read from the header alone.

    The header must parse, every tensor's byte range must match its dtype and shape, the ranges must
    follow one another from the start of the data without gap or overlap, and the file must be exactly
    as long as the header says: a truncated or padded file is refused without reading the tensors.
    These are the safetensors library's own rules, so that a file whose header passes is one it reads.
    """
    corrupt = f"{path} is corrupt or truncated"
    prefix = f.read(8)
    if len(prefix) < 8:
        raise CheckpointError(f"{corrupt}: {size} bytes, too short for a safetensors header")
    n = int.from_bytes(prefix, "little")
    if n > min(MAX_HEADER, size - 8):
        raise CheckpointError(f"{corrupt}: the header claims {n:,} bytes of a {size:,}-byte file")
    try:
        header = json.loads(f.read(n).decode("utf-8"), parse_constant=not_json)
    except ValueError:  # not UTF-8, not JSON, or NaN and Infinity
        raise CheckpointError(f"{corrupt}: its header is not JSON") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{corrupt}: its header is not a JSON object")
    shapes, spans = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            if info is not None and not (isinstance(info, dict) and all(isinstance(v, str) for v in info.values())):
                raise CheckpointError(f"{corrupt}: its __metadata__ is not an object of strings")
            continue
        try:
            shape, (begin, stop), width = info["shape"], info["data_offsets"], DTYPE_BYTES[info["dtype"]]
        except (KeyError, TypeError, ValueError):
            raise CheckpointError(f"{corrupt}: the header entry of {name!r} is invalid") from None
        if not isinstance(shape, list) or not all(map(is_size, (*shape, begin, stop))):
            raise CheckpointError(f"{corrupt}: the header entry of {name!r} is invalid")
        if begin > stop or stop - begin != math.prod(shape) * width:
            raise CheckpointError(f"{corrupt}: {name!r} has {stop - begin} bytes for shape {tuple(shape)}")
        shapes[name] = tuple(shape)
        spans.append((begin, stop, name))
    end = 0
    for begin, stop, name in sorted(spans):
        if begin != end:
            raise CheckpointError(f"{corrupt}: {name!r} starts at byte {begin:,} of the data, "
                                  f"where the tensor before it ends at {end:,}")
        end = stop
    if size != 8 + n + end:
        raise CheckpointError(f"{corrupt}: the header describes {8 + n + end:,} bytes, the file has {size:,}")
    return shapes


def not_json(constant: str):
    """Refuse NaN and Infinity, which Python's json reads and JSON (and the safetensors library) does not."""
    raise ValueError(f"{constant} is not JSON")


def is_size(x) -> bool:
    """Whether a header value is one the safetensors library reads as a size: a JSON integer (not a
    bool) that fits 64 bits unsigned."""
    return type(x) is int and 0 <= x < 2 ** 64


def weight_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    """The tensor shapes of a safetensors file, as :func:`header_shapes` checks them: its header and
    length only, no tensor data (how the app lists checkpoints)."""
    try:
        with open(path, "rb") as f:
            return header_shapes(f, os.fstat(f.fileno()).st_size, path)
    except FileNotFoundError:
        raise CheckpointError(f"weights are missing: {path}") from None


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file, read in one go; its header is checked first as
    :func:`header_shapes` says, so a damaged file is refused with the same message as in the listing."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise CheckpointError(f"weights are missing: {path}") from None
    header_shapes(io.BytesIO(data), len(data), path)
    try:
        return tensors_from_bytes(data)
    except SafetensorError as e:
        raise CheckpointError(f"{path} is corrupt or truncated: {e}") from None


def meta_model(cfg: ModelConfig, shapes: dict[str, tuple[int, ...]]) -> TextModel:
    """A model of this configuration on the meta device (no memory, no initialisation), once weights of
    ``shapes`` are known to fit it; :class:`CheckpointError` saying which do not otherwise."""
    with torch.device("meta"):
        model = TextModel(cfg)
    problem = shape_problems({k: tuple(v.shape) for k, v in model.state_dict().items()}, shapes)
    if problem:
        raise CheckpointError(problem)
    return model


def shape_problems(expected: dict, got: dict) -> str | None:
    """Why weights of shapes ``got`` do not fit a model expecting ``expected``, or None when they do."""
    problems = [f"missing {k}" for k in expected if k not in got]
    problems += [f"unexpected {k}" for k in got if k not in expected]
    problems += [f"{k} has shape {got[k]}, expected {expected[k]}" for k in expected if k in got and got[k] != expected[k]]
    if not problems:
        return None
    return ("weights do not fit the configuration: " + "; ".join(problems[:5])
            + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))


def read_metrics(path: Path) -> dict:
    """metrics.json of a checkpoint directory; {} when it has none (metrics are optional)."""
    if not (path / METRICS).exists():
        return {}
    metrics = read_json(path / METRICS, "metrics.json")
    if not isinstance(metrics, dict):
        raise CheckpointError(f"metrics.json is not a JSON object ({path / METRICS})")
    return metrics


def read_model_files(path: Path) -> tuple[dict, ModelConfig, Vocab]:
    """(config, model configuration, vocab) of a checkpoint directory as :func:`resolve` returns it: the
    files that say what the model is, config.json and vocab.json, checked (the vocabulary's size
    against the configuration)."""
    config = read_config(path)
    cfg = model_config(config)
    words = read_json(path / VOCAB, "vocab.json")
    try:
        vocab = Vocab.from_json(words)
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"vocab.json is invalid: {e}") from None
    if len(vocab) != cfg.vocab_size:
        raise CheckpointError(f"vocab.json has {len(vocab)} words but the model expects {cfg.vocab_size}")
    return config, cfg, vocab


def check(path: Path) -> tuple[dict, ModelConfig, Vocab, dict]:
    """(config, model configuration, vocab, metrics) of a checkpoint that is whole, without reading the tensors.

    ``path`` is a checkpoint directory as :func:`resolve` returns it. Everything :func:`load` checks
    short of the tensor data, with the same functions in the same order: the JSON files, the vocabulary
    size, the safetensors header against the file length, and every weight's shape against the
    configuration. The app lists checkpoints with it, so what it lists as working loads (the tensor
    bytes themselves carry no checksum: there is nothing more to check in them).
    """
    config, cfg, vocab = read_model_files(path)
    meta_model(cfg, weight_shapes(path / WEIGHTS))
    return config, cfg, vocab, read_metrics(path)


def loaded_vocabulary(config: dict) -> str:
    """Which of :data:`VOCABULARIES` a model was loaded with, from the config :func:`load` returned with it:
    an "open" load says what it did in ``config["vocabulary"]``, a "stored" one adds nothing."""
    return "open" if "vocabulary" in config else "stored"


def vectors_source(config: dict) -> str | None:
    """The word vectors a checkpoint was trained with, as its config names them (``vectors.source``, else
    the training's ``embeddings``), or None."""
    return (config.get("vectors") or {}).get("source") or (config.get("train_config") or {}).get("embeddings")


# How the line of :func:`vectors_to_open` starts when the vectors are named and trusted but not on this machine:
# the one case a user can remedy, and whose predictions differ from a machine that has them.
MISSING_VECTORS = "stored words only, its word vectors are not here"


def vectors_missing(config: dict) -> str | None:
    """The line saying that an "open" vocabulary cannot find the vectors the model was trained with, naming what
    gets them (its words outside the stored ones are then <unk>, unlike on a machine that has them), else None."""
    source, why_not = vectors_to_open(config)
    return why_not if source is None and why_not.startswith(MISSING_VECTORS) else None


def vectors_to_open(config: dict) -> tuple[str | None, str]:
    """(the word vectors an "open" vocabulary reads, "") for a checkpoint's config, or (None, the line saying
    why it keeps its stored words): the vectors are not named, not here, or not those it was trained with."""
    recorded = config.get("vectors") or {}
    source = vectors_source(config)
    if not source:
        return None, "stored words only: the checkpoint does not name its word vectors"
    if not recorded.get("sha256") and source not in ("glove-100d", "glove-50d"):
        return None, f"stored words only: no SHA-256 of {source} was recorded to check it against"
    try:
        found = fingerprint(source)
    except FileNotFoundError as e:
        return None, f"{MISSING_VECTORS}: {e}"
    if recorded.get("sha256") and found != recorded["sha256"]:
        return None, f"stored words only: the files of {source} here differ from those the model was trained with"
    return source, ""


def open_vocabulary(model: TextModel, vocab: Vocab, config: dict) -> tuple[Vocab, str]:
    """Grow a loaded model to every word of the vectors it was trained with, as frozen rows; returns the
    grown vocabulary and a line saying what was done.

    The vectors are those the checkpoint's config names (``vectors.source``, else the training's
    ``embeddings``), read only when their files' SHA-256 match those the checkpoint recorded: a
    checkpoint without them (trained before they were recorded) is opened only with one of the pinned
    GloVe packages. Otherwise, or when the vectors are not on this machine, the model keeps the stored
    words (training's, and the most frequent GloVe words stored with them).
    """
    source, why_not = vectors_to_open(config)
    if source is None:
        return vocab, why_not
    words, vectors = rows_beyond(source, vocab.stoi)
    if vectors.shape[1] != model.cfg.encoder_cfg.d_e:
        return vocab, (f"stored words only: {source} has {vectors.shape[1]} dimensions, "
                       f"the model {model.cfg.encoder_cfg.d_e}")
    model.embed.append_frozen(torch.from_numpy(vectors))
    model.cfg.vocab_size += len(words)
    model.cfg.frozen_vocab += len(words)
    return vocab.extended(words), f"open: {len(words):,} words of {source} added to the {len(vocab):,} stored"


def load(path: str | Path, kernel: str | None = None, device: str | torch.device = "cpu",
         vocabulary: str = "open") -> tuple[TextModel, Vocab, dict, dict]:
    """(model in eval mode, vocab, config, metrics) of the checkpoint directory that :func:`resolve` finds
    at ``path``, without unpickling anything; :class:`CheckpointError` with the reason when it cannot be used.

    ``kernel`` overrides the token2token path of the checkpoint's configuration (see
    :mod:`disan.nn.kernels`: "auto", "cpp", "eager" or "dense"); the model is put on ``device``
    (a name of :func:`~disan.nn.device.resolve_device`: auto, cpu, cuda, cuda:N). ``vocabulary``
    (:data:`VOCABULARIES`): "open" grows the model to every word of its vectors when they are here
    (:func:`open_vocabulary`; ``config["vocabulary"]`` says what was done), "stored" keeps the words
    the checkpoint holds, with which its recorded figures were measured.

    The checks are :func:`check`'s, each made once: the weights file is read once, its header checked
    before its tensors are made, and the model is built once, on the meta device, where the tensors
    read then become its weights.
    """
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"vocabulary must be one of {VOCABULARIES}, not {vocabulary!r}")
    device = resolve_device(device)  # before any reading: a missing GPU is the first thing to hear of
    path = resolve(path)
    config, cfg, vocab = read_model_files(path)
    if kernel is not None:
        cfg.encoder_cfg = dataclasses.replace(cfg.encoder_cfg, kernel=kernel)  # validated like the rest
    state = read_weights(path / WEIGHTS)
    model = meta_model(cfg, {k: tuple(v.shape) for k, v in state.items()})
    metrics = read_metrics(path)
    # assign: the tensors read become the weights, with no initialisation and no second copy; the learned
    # embedding rows that a large vocabulary stores at half precision are widened to the model's dtype
    dtypes = {k: v.dtype for k, v in model.state_dict().items()}
    model.load_state_dict({k: v.to(dtypes[k]) for k, v in state.items()}, assign=True)
    if vocabulary == "open":
        vocab, config["vocabulary"] = open_vocabulary(model, vocab, config)
    return model.to(device).eval(), vocab, config, metrics


def card(path: str | Path) -> str:
    """The checkpoint's model card (Markdown), or '' when it has none."""
    path = resolve(path)
    return (path / CARD).read_text(encoding="utf-8") if (path / CARD).exists() else ""
