"""The on-disk result cache: what a corpus analysis computed, kept across server restarts.

    DISAN_CACHE_DIR   where it lives (default: the user's cache folder,
                      :func:`disan.data.paths.cache_folder`; never the checkout)
    DISAN_CACHE_MB    the bound on its size in megabytes (default 512): past it, the entries read least
                      recently are deleted

An analysis stores its result under a key that names everything the result depends on
(:func:`disan.store.keys.result_key`: the checkpoint's content, the corpus, the settings, the code), one file
per entry in the folder's ``results/``, written by :mod:`disan.store.codec` (arrays and a JSON manifest, no
pickling). Results are stored, never figures: what is drawn of a result is drawn again from it. An entry that
cannot be read (truncated, corrupt, of another layout) is deleted and its result computed again. Other
processes may read, write and trim the same folder at the same time.

Usage, as the app's analysis pages and any later corpus page use it::

    key = keys.result_key("case study", directory, corpus=corpus_digest(texts), seed=0)
    study = diskcache.cached(key, lambda: casestudy.measure(disan.load(directory), tokens))
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from disan.data import environment
from disan.data.paths import cache_folder
from disan.store import codec

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
        value = codec.read(path)
    except codec.UNREADABLE:
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
    """Store a result under ``key`` (as :func:`disan.store.codec.encode` describes it; a value it refuses, a
    figure say, raises TypeError), then delete the least recently used entries until the cache is within its
    bound (:func:`bound_bytes`). Other processes may store, read and trim the same folder meanwhile: nothing
    they do makes this raise."""
    path = entry_path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of its own, with a leading dot, which no listing of the entries (and so no trim) takes
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}{SUFFIX}")
    try:
        codec.write(value, temporary)
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
