"""What a kept result depends on, as the key it is stored under (:mod:`disan.store.diskcache`).

:func:`result_key` is a digest of everything an analysis's result depends on:

* the checkpoint's content: the SHA-256 of the bytes of each file the model is built from (not its path
  or time stamp), remembered per path, size and modification time in the cache folder's ``digests.json``
  so that an unchanged file is read once per machine, not once per run (:func:`file_digest`);
* the vocabulary the model is loaded with ("open" or "stored") and, for an open one where the checkpoint
  names word vectors that are on this machine, their files' SHA-256: an open vocabulary changes outputs.
  All of it is read from the checkpoint's directory, so a kept result is found without loading the model
  (:func:`checkpoint_digest`);
* a digest of the ``disan`` package's source files (its version never changes when its code does;
  :func:`sources_digest`);
* the analysis's name and its settings, the corpus among them (:func:`disan.data.checksums.corpus_digest`).

A changed checkpoint, corpus, setting or code (the layout of the entries, :mod:`disan.store.codec`, among
it) names another entry, so an old result is never read; it stays until the cache's bound needs its room.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from pathlib import Path

from disan.data.checksums import sha256_file
from disan.data.vectors import source_files
from disan.nn.checkpoint import CONFIG, VOCAB, VOCABULARIES, WEIGHTS, loaded_vocabulary, read_config, vectors_source
from disan.store.diskcache import cache_dir

DIGESTS = "digests.json"  # in the cache folder: path -> [size, modification time in ns, SHA-256]
_lock = threading.Lock()  # the app computes in several threads (one per session)


def _atomic_write(path: Path, data: bytes) -> None:
    """Write a file whole or not at all: a reader never sees half of it (another process may be writing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def file_digest(path) -> str:
    """The SHA-256 of a file's bytes, read again only when its path, size or modification time changes
    (remembered in the cache folder's :data:`DIGESTS`)."""
    path = Path(path).resolve()
    found = path.stat()
    stamp = [found.st_size, found.st_mtime_ns]
    index_path = cache_dir() / DIGESTS
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
    """:func:`checkpoint_digest` of a loaded pipeline's checkpoint (its ``path``), with the vocabulary it was
    loaded with (read from its ``config``): the files name the model, so its tensors are never read here."""
    if pipe.path is None:
        raise ValueError("a pipeline without a checkpoint directory has no content to key a cached result by")
    return checkpoint_digest(pipe.path, loaded_vocabulary(pipe.config))


def key_of(what: str, **parts) -> str:
    """The key of a result that depends on the package's sources and ``parts`` (JSON values) alone."""
    named = {"what": what, "sources": sources_digest(), "parts": parts}
    return hashlib.sha256(json.dumps(named, sort_keys=True).encode("utf-8")).hexdigest()


def result_key(analysis: str, model, **settings) -> str:
    """The key of an analysis's result: a digest of the model, the package's sources, the analysis and its
    settings (JSON values; the corpus given as :func:`disan.data.checksums.corpus_digest`). ``model``: a loaded
    pipeline (:func:`model_digest`), or a checkpoint directory as the app loads it, with the open vocabulary
    (:func:`checkpoint_digest`), which names the same result without loading the model."""
    digest = checkpoint_digest(model) if isinstance(model, (str, os.PathLike)) else model_digest(model)
    return key_of(analysis, model=digest, settings=settings)
