"""The files the Training page offers: the table files of a folder one may train on, and the files
visitors upload, kept under safe names in the uploads folder (:func:`disan.data.paths.uploads_dir`, never
the benchmark data folder); and the one size bound of every upload of the app (``DISAN_UPLOAD_MB``), on
the Training and Corpus senses pages alike.

A visitor never names a path on the server (the app may serve a class from a shared machine): a file is
either uploaded, and saved under a name made from its last path part, or picked among
:func:`table_files`, which lists only files inside a folder. An upload is read from a temporary copy
of its own (:func:`stage_upload`) until it proves usable, and only then kept: a refused upload leaves
nothing in the folder.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from contextlib import suppress
from pathlib import Path

from disan.data.files import TABLES, DataError, format_of
from disan.data import environment
from disan.data.checksums import sha256_file

UPLOAD_ENV = "DISAN_UPLOAD_MB"
DEFAULT_UPLOAD_MB = 50
MAX_STEM = 100               # characters of an upload's name kept before its extension


def upload_limit_mb() -> int:
    """The largest upload in megabytes (MiB): ``DISAN_UPLOAD_MB``, else :data:`DEFAULT_UPLOAD_MB`; ValueError
    for a value that is not a whole number from 1 up."""
    return environment.number(UPLOAD_ENV, DEFAULT_UPLOAD_MB, "megabytes", whole=True, least=1)


def check_size(size: int, limit_mb: int | None = None) -> None:
    """DataError for a file of ``size`` bytes over ``limit_mb`` megabytes (default: :func:`upload_limit_mb`)."""
    limit_mb = upload_limit_mb() if limit_mb is None else limit_mb
    if size > limit_mb * 2**20:
        raise DataError(f"the file has {size / 2**20:.1f} MB; uploads are limited to {limit_mb} MB "
                        f"(set {UPLOAD_ENV} on the server to change it)")


def safe_name(name: str) -> str:
    """The name an uploaded file is kept under: its last path part (after a slash or a backslash), with
    every character but letters, digits, ``.``, ``-`` and ``_`` replaced by ``_``, no leading dot, the
    extension in lower case; DataError when that extension is not one of :data:`~disan.data.choices.TABLES`."""
    base = re.sub(r"[^\w.-]", "_", re.split(r"[\\/]", name)[-1]).lstrip(".")
    suffix = format_of(base, TABLES)
    stem = base[:-len(suffix)]
    if not stem.strip("._"):
        raise DataError(f"{name!r} has no name before its extension")
    return stem[:MAX_STEM] + suffix


def stage_upload(name: str, data: bytes, limit_mb: int | None = None) -> Path:
    """An uploaded file written under :func:`safe_name` to a new temporary folder of its own, outside the
    uploads folder, to be read and checked before :func:`save_upload` keeps it (:func:`discard` removes it).
    DataError for a file over ``limit_mb`` megabytes (default: :func:`upload_limit_mb`) or of another format."""
    check_size(len(data), limit_mb)
    kept = safe_name(name)
    path = Path(tempfile.mkdtemp(prefix="disan-upload-")) / kept  # a folder only its owner can enter
    path.write_bytes(data)
    return path


def discard(staged: Path) -> None:
    """Remove a copy made by :func:`stage_upload`, and its folder once empty."""
    staged.unlink(missing_ok=True)
    with suppress(OSError):
        staged.parent.rmdir()


def save_upload(folder: str | os.PathLike, name: str, data: bytes, limit_mb: int | None = None) -> Path:
    """Keep an uploaded file in ``folder`` (made if missing) under :func:`safe_name`: the file already there
    when it has the same name and SHA-256, else a new one, named with the start of its SHA-256 when the name
    is taken by other content. DataError for a file over ``limit_mb`` megabytes
    (default: :func:`upload_limit_mb`) or of another format. The bytes go to a hidden file first, linked to
    its name once whole: a listing never shows half a file, and no upload replaces another."""
    check_size(len(data), limit_mb)
    kept = safe_name(name)
    digest = hashlib.sha256(data).hexdigest()
    target = Path(folder).expanduser()
    target.mkdir(parents=True, exist_ok=True)
    target = target.resolve()
    stem, suffix = kept.rsplit(".", 1)
    for candidate in (kept, f"{stem}-{digest[:12]}.{suffix}"):
        path = target / candidate
        if not path.exists():
            handle, partial = tempfile.mkstemp(prefix=".upload-", suffix=".part", dir=target)
            try:
                with os.fdopen(handle, "wb") as f:
                    f.write(data)
                os.link(partial, path)  # never replaces a file another upload gave the name meanwhile
            except FileExistsError:
                pass
            finally:
                os.unlink(partial)
        if path.is_file() and not path.is_symlink() and sha256_file(path) == digest:
            return path
    raise DataError(f"{kept}: the uploads folder already holds two other files of that name; rename the file")


def table_files(folder: str | os.PathLike) -> dict[str, Path]:
    """The files one may train on at the top of ``folder``, by name: its ``.csv``, ``.tsv`` and ``.jsonl``
    files, sorted, hidden files left out, and only those that stay inside ``folder`` once links are followed;
    none when there is no such folder."""
    root = Path(folder).resolve()
    if not root.is_dir():
        return {}
    found = {}
    for path in sorted(root.iterdir()):
        if path.name.startswith(".") or path.suffix.lower() not in TABLES:
            continue
        real = path.resolve()
        if real.is_file() and real.is_relative_to(root):
            found[path.name] = path
    return found
