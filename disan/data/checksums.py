"""File digests and the ``SHA256SUMS`` files that list them (the benchmark data's, the fetched vectors').

Standard library only: the ``download`` command imports it, and its ``--help`` imports no numpy.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

CHECKSUM_FILE = "SHA256SUMS"


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def parse_checksums(text: str) -> dict[str, str]:
    """``sha256sum`` output ("<hex>  <path>" or "<hex> *<path>" per line) -> {path: hex}."""
    table = {}
    for line in text.splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            table[name.removeprefix("*")] = digest.lower()
    return table


def corpus_digest(*columns: Iterable) -> str:
    """A digest of a corpus given as columns of one JSON value per sentence (texts, labels, pairs, ...): what
    names it in a result's key."""
    digest = hashlib.sha256()
    for column in columns:
        digest.update(json.dumps(list(column), ensure_ascii=False).encode("utf-8") + b"\0")
    return digest.hexdigest()
