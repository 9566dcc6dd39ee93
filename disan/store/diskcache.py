"""The on-disk result cache: what a corpus analysis computed, kept across server restarts.

    DISAN_CACHE_DIR   where it lives (default: the user's cache folder,
                      :func:`disan.data.paths.cache_folder`; never the checkout)
    DISAN_CACHE_MB    the bound on its size in megabytes (default 512): past it, the entries read least
                      recently are deleted

An analysis stores its result under :func:`result_key`, a digest of everything the result depends on:

* the checkpoint's content: the SHA-256 of the bytes of each file the model is built from (not its path
  or time stamp), remembered per path, size and modification time in ``digests.json`` so that an
  unchanged file is read once per machine, not once per run;
* the vocabulary the model is loaded with ("open" or "stored") and, for an open one where the checkpoint
  names word vectors that are on this machine, their files' SHA-256: an open vocabulary changes outputs.
  All of it is read from the checkpoint's directory, so a kept result is found without loading the model
  (:func:`checkpoint_digest`);
* a digest of the ``disan`` package's source files (its version never changes when its code does);
* the analysis's name and its settings, the corpus among them (:func:`disan.data.checksums.corpus_digest`).

A changed checkpoint, corpus, setting or code (this module's layout of the entries among it) names another
entry, so an old result is never read; it stays until the bound needs its room.

Entries are stored without pickling: one ``.npz`` file per result, holding the result's arrays and table
columns, plus a JSON ``manifest`` of its structure (this package's dataclasses, pandas tables, plotly
figures as plotly's JSON, a view's drawing, dicts, lists, tuples, numbers, strings; see :func:`encode`). Reading runs no stored code: arrays are read with
``allow_pickle=False`` and the only classes built are dataclasses of ``disan`` named in the manifest. An
entry that cannot be read (truncated, corrupt, of another layout) is deleted and its result computed again.

Usage, as the app's analysis pages and any later corpus page use it::

    key = diskcache.result_key("case study", directory, corpus=corpus_digest(texts), seed=0)
    study = diskcache.cached(key, lambda: casestudy.measure(disan.load(directory), tokens))
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import json
import os
import threading
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from disan.data import environment
from disan.data.paths import cache_folder
from disan.data.checksums import sha256_file
from disan.data.vectors import source_files
from disan.render.views import Drawing
from disan.nn.checkpoint import CONFIG, VOCAB, VOCABULARIES, WEIGHTS, loaded_vocabulary, read_config, vectors_source

DIR_ENV, BOUND_ENV = "DISAN_CACHE_DIR", "DISAN_CACHE_MB"
DEFAULT_MB = 512
SUFFIX = ".npz"
_lock = threading.Lock()  # the app computes in several threads (one per session)


def cache_dir() -> Path:
    """Where the cache lives: ``$DISAN_CACHE_DIR``, else the user's cache folder."""
    text = os.environ.get(DIR_ENV, "").strip()
    return Path(text).expanduser() if text else cache_folder()


def bound_bytes() -> int:
    """The cache's bound in bytes: ``$DISAN_CACHE_MB`` megabytes, else :data:`DEFAULT_MB`."""
    return int(environment.number(BOUND_ENV, DEFAULT_MB, "megabytes") * 2**20)


# ---------------------------------------------------------------- what a result depends on

def _atomic_write(path: Path, data: bytes) -> None:
    """Write a file whole or not at all: a reader never sees half of it (another process may be writing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def file_digest(path) -> str:
    """The SHA-256 of a file's bytes, read again only when its path, size or modification time changes
    (remembered in the cache folder's ``digests.json``)."""
    path = Path(path).resolve()
    found = path.stat()
    stamp = [found.st_size, found.st_mtime_ns]
    index_path = cache_dir() / "digests.json"
    with _lock:
        try:
            index = json.loads(index_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            index = {}
        known = index.get(str(path)) if isinstance(index, dict) else None
        if isinstance(known, list) and known[:2] == stamp:
            return known[2]
        digest = sha256_file(path)
        index = index if isinstance(index, dict) else {}
        index[str(path)] = stamp + [digest]
        try:
            _atomic_write(index_path, json.dumps(index).encode("utf-8"))
        except OSError:
            pass  # a folder that cannot be written costs reading the file again, nothing more
    return digest


@functools.cache
def sources_digest() -> str:
    """A digest of the ``disan`` package's source files (code, the C++ kernel, data files), once per process."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                       and p.suffix in (".py", ".cpp", ".h", ".cu", ".json", ".txt")):
        digest.update(str(path.relative_to(root)).encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def checkpoint_digest(directory, vocabulary: str = "open") -> dict:
    """What the outputs of the model in a checkpoint directory, loaded with ``vocabulary`` (one of
    :data:`disan.nn.choices.VOCABULARIES`; the app loads "open"), depend on, without loading it: its
    files' SHA-256, the vocabulary, and for an open one the SHA-256 of the word vectors its config names,
    where they are on this machine. Whether an open vocabulary reads them and which words it adds
    (:func:`disan.nn.checkpoint.open_vocabulary`) follow from these files alone, so a result is named before
    the model is loaded, and a kept one is read without loading it."""
    if vocabulary not in VOCABULARIES:
        raise ValueError(f"vocabulary must be one of {VOCABULARIES}, not {vocabulary!r}")
    directory = Path(directory)
    files = {name: file_digest(directory / name) for name in (CONFIG, WEIGHTS, VOCAB)}
    source = vectors_source(read_config(directory)) if vocabulary == "open" else None
    vectors = None
    if source:
        try:
            vectors = {p.name: file_digest(p) for p in source_files(source)}
        except (FileNotFoundError, ValueError):
            vectors = None  # not here: the model keeps its stored words until they are
    return {"files": files, "vocabulary": vocabulary, "vectors": vectors}


def model_digest(pipe) -> dict:
    """:func:`checkpoint_digest` of a loaded pipeline's checkpoint, with the vocabulary it was loaded with."""
    if pipe.path is None:
        raise ValueError("a pipeline without a checkpoint directory has no content to key a cached result by")
    return checkpoint_digest(pipe.path, loaded_vocabulary(pipe.config))


def key_of(what: str, **parts) -> str:
    """The key of a result that depends on the package's sources and ``parts`` (JSON values) alone."""
    named = {"what": what, "sources": sources_digest(), "parts": parts}
    return hashlib.sha256(json.dumps(named, sort_keys=True).encode("utf-8")).hexdigest()


def result_key(analysis: str, model, **settings) -> str:
    """The key of an analysis's result: a digest of the model, the package's sources, the analysis and its
    settings (JSON values; the corpus given as :func:`corpus_digest`). ``model``: a loaded pipeline
    (:func:`model_digest`), or a checkpoint directory as the app loads it, with the open vocabulary
    (:func:`checkpoint_digest`), which names the same result without loading the model."""
    digest = checkpoint_digest(model) if isinstance(model, (str, os.PathLike)) else model_digest(model)
    return key_of(analysis, model=digest, settings=settings)


# ---------------------------------------------------------------- results as arrays and JSON

def encode(value, arrays: list[np.ndarray]):
    """A JSON-able description of ``value`` whose arrays are appended to ``arrays`` (referred to by
    position). Raises TypeError for a value of another type (a tensor, a figure, a function)."""
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind == "O":
            return {"objects": [encode(v, arrays) for v in array.ravel().tolist()], "shape": list(array.shape)}
        arrays.append(array)
        return {"array": len(arrays) - 1, "scalar": isinstance(value, np.generic)}
    if isinstance(value, go.Figure):
        return {"figure": value.to_json()}  # plotly's own JSON, as Streamlit sends it
    if isinstance(value, Drawing):
        return {"drawing": [encode(row, arrays) for row in value.rows]}
    if isinstance(value, pd.DataFrame):
        return {"frame": {"columns": [encode(c, arrays) for c in value.columns],
                          "data": [_encode_values(value.iloc[:, i], arrays) for i in range(value.shape[1])],
                          "index": _encode_index(value.index, arrays)}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if not cls.__module__.startswith("disan."):
            raise TypeError(f"only disan's dataclasses are stored, not {cls.__module__}.{cls.__qualname__}")
        return {"dataclass": f"{cls.__module__}:{cls.__qualname__}",
                "fields": {f.name: encode(getattr(value, f.name), arrays) for f in dataclasses.fields(value)}}
    if isinstance(value, Mapping):
        return {"dict": [[encode(k, arrays), encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        return {"list" if isinstance(value, list) else "tuple": [encode(v, arrays) for v in value]}
    raise TypeError(f"a {type(value).__name__} cannot be stored in the result cache")


def _encode_values(values: pd.Series | pd.Index, arrays: list):
    """A column or an index's values: numbers, booleans and times as one array; anything else (strings,
    objects) value by value, with the dtype to rebuild it with."""
    if isinstance(values.dtype, np.dtype) and values.dtype.kind in "biufcmM":
        arrays.append(values.to_numpy())
        return {"array": len(arrays) - 1, "scalar": False}
    return {"values": [encode(v, arrays) for v in values.tolist()], "dtype": str(values.dtype)}


def _encode_index(index: pd.Index, arrays: list):
    if isinstance(index, pd.RangeIndex):
        return {"range": [index.start, index.stop, index.step], "name": encode(index.name, arrays)}
    return {"values": _encode_values(index, arrays), "name": encode(index.name, arrays)}


def decode(tree, arrays: Mapping[str, np.ndarray]):
    """The value that :func:`encode` described; ``arrays`` by name ``a0``, ``a1``, ..."""
    if not isinstance(tree, dict):
        return tree
    if "array" in tree:
        array = arrays[f"a{tree['array']}"]
        return array[()] if tree["scalar"] else array
    if "objects" in tree:
        out = np.empty(len(tree["objects"]), dtype=object)
        out[:] = [decode(v, arrays) for v in tree["objects"]]
        return out.reshape(tree["shape"])
    if "figure" in tree:
        # not validated again: it was made by this package's figures, which build without validation
        return go.Figure(json.loads(tree["figure"]), _validate=False)
    if "drawing" in tree:
        return Drawing([decode(row, arrays) for row in tree["drawing"]])
    if "frame" in tree:
        spec = tree["frame"]
        index = _decode_index(spec["index"], arrays)
        columns = {i: _decode_values(v, arrays, index) for i, v in enumerate(spec["data"])}
        frame = pd.DataFrame(columns, index=index)
        frame.columns = pd.Index([decode(c, arrays) for c in spec["columns"]])
        return frame
    if "dataclass" in tree:
        module, name = tree["dataclass"].split(":")
        if not module.startswith("disan."):
            raise ValueError(f"the manifest names a class outside disan: {module}")
        cls = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"{tree['dataclass']} is not a dataclass")
        return cls(**{k: decode(v, arrays) for k, v in tree["fields"].items()})
    if "dict" in tree:
        return {decode(k, arrays): decode(v, arrays) for k, v in tree["dict"]}
    if "list" in tree:
        return [decode(v, arrays) for v in tree["list"]]
    if "tuple" in tree:
        return tuple(decode(v, arrays) for v in tree["tuple"])
    raise ValueError(f"an unknown entry in the manifest: {sorted(tree)}")


def _decode_values(tree, arrays, index=None) -> pd.Series:
    if "array" in tree:
        return pd.Series(arrays[f"a{tree['array']}"], index=index, copy=False)
    values = [decode(v, arrays) for v in tree["values"]]
    if tree["dtype"] == "object":
        held = np.empty(len(values), dtype=object)
        held[:] = values
        return pd.Series(held, index=index, dtype=object)
    return pd.Series(values, index=index, dtype=tree["dtype"])


def _decode_index(tree, arrays) -> pd.Index:
    name = decode(tree["name"], arrays)
    if "range" in tree:
        return pd.RangeIndex(*tree["range"], name=name)
    return pd.Index(_decode_values(tree["values"], arrays), name=name)


# ---------------------------------------------------------------- the entries

def entry_path(key: str) -> Path:
    """The file of the entry under ``key``."""
    return cache_dir() / "results" / f"{key}{SUFFIX}"


def known(key: str) -> bool:
    """Whether a result is stored under ``key`` (it may still turn out unreadable)."""
    return entry_path(key).is_file()


def fetch(key: str):
    """The result stored under ``key``, or None when there is none or it cannot be read (then it is
    deleted). A read marks the entry as recently used."""
    path = entry_path(key)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as held:
            arrays = {name: held[name] for name in held.files}
        value = decode(json.loads(arrays.pop("manifest").tobytes().decode("utf-8")), arrays)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError, zipfile.BadZipFile, EOFError):
        try:
            path.unlink(missing_ok=True)  # corrupt or of another layout: computed again, and stored anew
        except OSError:
            pass
        return None
    try:
        os.utime(path)  # its time stamp is its last use, whatever the file system does with access times
    except OSError:
        pass
    return value


def store(key: str, value) -> None:
    """Store a result under ``key`` (as :func:`encode` describes it), then delete the least recently
    used entries until the cache is within its bound (:func:`bound_bytes`). Other processes may store,
    read and trim the same folder meanwhile: nothing they do makes this raise."""
    arrays: list[np.ndarray] = []
    manifest = json.dumps(encode(value, arrays), allow_nan=True).encode("utf-8")
    named = {f"a{i}": a for i, a in enumerate(arrays)}
    named["manifest"] = np.frombuffer(manifest, dtype=np.uint8)
    path = entry_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of its own, with a leading dot, which no listing of the entries (and so no trim) takes
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}{SUFFIX}")
    try:
        np.savez(temporary, **named)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    trim(bound_bytes())


def listing() -> list[tuple[int, int, Path]]:
    """(last use in ns, size in bytes, path) of each stored entry, least recently used first. Each file is
    looked at once: another process may delete an entry at any moment, and one gone before its look is
    left out, so no later look can find it missing."""
    found = []
    for path in (cache_dir() / "results").glob(f"*{SUFFIX}"):
        if path.name.startswith("."):
            continue  # a store's file still being written
        try:
            seen = path.stat()
        except FileNotFoundError:
            continue
        found.append((seen.st_mtime_ns, seen.st_size, path))
    return sorted(found)


def entries() -> list[Path]:
    """The stored entries, least recently used first."""
    return [path for _, _, path in listing()]


def trim(bound: int) -> None:
    """Delete the least recently used entries until the entries take at most ``bound`` bytes. An entry
    another process deletes meanwhile is counted as deleted here, which errs towards a smaller cache."""
    with _lock:
        found = listing()
        total = sum(size for _, size, _ in found)
        for _, size, path in found:
            if total <= bound:
                break
            path.unlink(missing_ok=True)
            total -= size


# key -> [its lock, the threads holding or awaiting it]: one computation per key at a time in this process
_computing: dict[str, list] = {}
_computing_lock = threading.Lock()


def cached(key: str, compute: Callable[[], object]):
    """The result stored under ``key``, else ``compute()``, stored where the disk allows. Threads asking for
    the same key at once (sessions of the app opening one page) compute it once: the others wait for it and
    read what it stored."""
    value = fetch(key)
    if value is not None:
        return value
    with _computing_lock:
        claim = _computing.setdefault(key, [threading.Lock(), 0])
        claim[1] += 1
    try:
        with claim[0]:
            value = fetch(key)  # stored by the thread this one waited for
            if value is None:
                value = compute()
                try:
                    store(key, value)
                except OSError:
                    pass  # a full or read-only disk: the result is still good, only not kept
    finally:
        with _computing_lock:
            claim[1] -= 1
            if not claim[1]:
                del _computing[key]
    return value
