"""Fetch the benchmark files from their official sources into the layout of ``shared/data``.

Every file is checked against the SHA-256 of the copy the loaders were written and
tested against (:data:`CHECKSUMS`); a file that differs is deleted and reported, never
used. Files already present with the right checksum are not fetched again.

Archive members are looked up by the paths in :data:`SOURCES`, falling back to the
only member with the same file name: the SST folder (``trees/``) is documented and
SentEval's script shows the folders of its zip, but the layout of the Cornell and
SICK archives is not documented. Nor is it known whether every official archive
still holds byte-identical files; a difference is reported, never hidden.
The SNLI files are SentEval's tokenised derivative of ``snli_1.0.zip`` and cannot be
fetched as such; see :data:`NOT_DOWNLOADABLE`.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Callable, Mapping

from disan.data.checksums import CHECKSUM_FILE, sha256_file
from disan.data.paths import DATA_ENV, DEFAULT_DATA_DIR

TIMEOUT_S = 60


@dataclass(frozen=True)
class Source:
    """One official download: an archive (or a plain file) and where its members go."""
    url: str
    members: dict[str, str]  # archive member path (for a plain file: its name) -> target path under dest


SOURCES = {
    "sst": Source("https://nlp.stanford.edu/sentiment/trainDevTestTrees_PTB.zip", {
        "trees/train.txt": "SST/train.txt",
        "trees/dev.txt": "SST/dev.txt",
        "trees/test.txt": "SST/test.txt",
    }),
    "trec-train": Source("https://cogcomp.seas.upenn.edu/Data/QA/QC/train_5500.label", {
        "train_5500.label": "TREC/train_5500.label",
    }),
    "trec-test": Source("https://cogcomp.seas.upenn.edu/Data/QA/QC/TREC_10.label", {
        "TREC_10.label": "TREC/TREC_10.label",
    }),
    # Folder names as SentEval's get_transfer_data.bash reads them after unzipping.
    "cr-mpqa-subj": Source("https://dl.fbaipublicfiles.com/senteval/senteval_data/datasmall_NB_ACL12.zip", {
        "data/customerr/custrev.pos": "CR/custrev.pos",
        "data/customerr/custrev.neg": "CR/custrev.neg",
        "data/mpqa/mpqa.pos": "MPQA/mpqa.pos",
        "data/mpqa/mpqa.neg": "MPQA/mpqa.neg",
        "data/subj/subj.subjective": "SUBJ/subj.subjective",
        "data/subj/subj.objective": "SUBJ/subj.objective",
    }),
    "mr": Source("https://www.cs.cornell.edu/people/pabo/movie-review-data/rt-polaritydata.tar.gz", {
        "rt-polaritydata/rt-polarity.pos": "MR/rt-polarity.pos",
        "rt-polaritydata/rt-polarity.neg": "MR/rt-polarity.neg",
    }),
    "sick-train": Source("http://alt.qcri.org/semeval2014/task1/data/uploads/sick_train.zip", {
        "SICK_train.txt": "SICK/SICK_train.txt",
    }),
    # Each SemEval zip carries a readme.txt; the one kept is the trial release's.
    "sick-trial": Source("http://alt.qcri.org/semeval2014/task1/data/uploads/sick_trial.zip", {
        "SICK_trial.txt": "SICK/SICK_trial.txt",
        "readme.txt": "SICK/readme.txt",
    }),
    "sick-test": Source("http://alt.qcri.org/semeval2014/task1/data/uploads/sick_test_annotated.zip", {
        "SICK_test_annotated.txt": "SICK/SICK_test_annotated.txt",
    }),
    "sick-full": Source("http://clic.cimec.unitn.it/composes/materials/SICK.zip", {
        "SICK.txt": "SICK/SICK.txt",
    }),
}

NOT_DOWNLOADABLE = {
    "SNLI": "SentEval-format SNLI (s1/s2/labels.{dev,test}) is derived from "
            "https://nlp.stanford.edu/projects/snli/snli_1.0.zip by SentEval's sed tokenizer; "
            "it has no download of its own. Copy these files into SNLI/ by hand.",
}

# The SHA256SUMS of the data folder the loaders were tested against.
CHECKSUMS = {
    "CR/custrev.neg": "8f29d7fa39f9862764b71f36b193f0674e0056287ffc5bf170edf6db42cc8f83",
    "CR/custrev.pos": "15eeb0b9424043bb3755488e2d8ed97bdaeba464a5c230f213bad075125d2192",
    "MPQA/mpqa.neg": "02e193d98c7715bc6200bb23dc6d2903482bd80c0432c53c3f3738c636df3f72",
    "MPQA/mpqa.pos": "f4aaafdd63c439fd2d056149f3b5d200416dabb200a8b7d8f4bf9903981ff8a5",
    "MR/rt-polarity.neg": "4ace77d558c3714723843f1d65b60c01e3417b208180f0728808d76ad0eeeaca",
    "MR/rt-polarity.pos": "2da124ec187a9d5a29c9f04e91c540e02baed5af8868f550a26bd6fd4dbf8bf0",
    "SICK/SICK.txt": "1539c2d059809b5bd40694e26d8121cc85b6b496f91c7b40f2fc83bbd7dcd957",
    "SICK/SICK_test_annotated.txt": "2b8aa806658d6fc23c6824c83776c2d4fee7556000817b5ec0f982861413b7d0",
    "SICK/SICK_train.txt": "266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e",
    "SICK/SICK_trial.txt": "5a88cfb62f8c6bd2a3cce0f2421ba2cb8c2be5ab4a800f6f01e2c64aafb7db56",
    "SICK/readme.txt": "ba8ce41d6de1a7c694dedb6e536d7a05212f104372687fbe7d8d448f8c308232",
    "SNLI/labels.dev": "d164d72435c3289fe53cb01e983f7c06e104bf192c0cae9caf2e99bf2e15f974",
    "SNLI/labels.test": "e25c363e5cc70d5494d6e6555d8053eced22dca836e0f03067530eaad3d4f5f5",
    "SNLI/s1.dev": "28a398b5478b10b4b851d4bb5b2e5767171519add6586015ed50b9436df11d00",
    "SNLI/s1.test": "62cb8107dc3c56a4376e5e521842be24e0d61c92c346b94917da2bbf2a47d8be",
    "SNLI/s2.dev": "a8c59709630b64ba103f7784c0cb7104a6baf23234562487264d9634714f5d2b",
    "SNLI/s2.test": "1174f3ad30a3c30fc0f9eeffc1b3b6a79e0514026c5a658968a8e2a324b311a1",
    "SST/dev.txt": "0e9336aed6e4730e19f58d00a77b3f0297efdb755f7b5e598c98a05e3f97ea40",
    "SST/test.txt": "6e54806dee95cf80cd918e7dfb3f6770f6df24bf826f289a4d1f709e1c8f6761",
    "SST/train.txt": "e2f3f41b0b1e6d4dddc0effe3bfc2d27ed8928079aa9a03d652311614fc5feb7",
    "SUBJ/subj.objective": "5ddc9b44dc60d64d651347fcd7bdd489b0c70661e3f768215c16eea36f51204a",
    "SUBJ/subj.subjective": "73a2dcf8dc3cbcc7f068a70ef9f021c86b2a8e4dac81566b7fd015b3e938f2c5",
    "TREC/TREC_10.label": "033f22c028c2bbba9ca682f68ffe204dc1aa6e1cf35dd6207f2d4ca67f0d0e8e",
    "TREC/train_5500.label": "9e4c8bdcaffb96ed61041bd64b564183d52793a8e91d84fc3a8646885f466ec3",
}


class DownloadError(RuntimeError):
    """One or more files could not be fetched or did not match their checksum."""


def _is_valid(path: Path, target: str) -> bool:
    return path.is_file() and sha256_file(path) == CHECKSUMS[target]


def _find_member(names: list[str], wanted: str) -> str:
    """``wanted`` if the archive has it, else the only member with the same file name."""
    if wanted in names:
        return wanted
    base = PurePosixPath(wanted).name
    hits = [n for n in names if PurePosixPath(n).name == base]
    if len(hits) != 1:
        raise DownloadError(f"the archive has {len(hits)} files named {base!r}, expected 1")
    return hits[0]


def _fetch(url: str, path: Path) -> None:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, open(path, "wb") as out:
        shutil.copyfileobj(response, out)


def _extract(archive: Path, kind_url: str, members: list[str], out_dir: Path) -> dict[str, Path]:
    """Copy each wanted member of a zip / tar.gz to ``out_dir``; a plain file is its own member.

    The archive type comes from the official URL, so a mirror may serve it under any name.
    """
    kind = kind_url.lower()
    if kind.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir()]
            return _copy_members(members, names, zf.open, out_dir)
    if kind.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive, "r:gz") as tf:
            names = [i.name for i in tf.getmembers() if i.isfile()]
            return _copy_members(members, names, tf.extractfile, out_dir)
    return {members[0]: archive}


def _copy_members(members: list[str], names: list[str], open_member: Callable[[str], IO[bytes]],
                  out_dir: Path) -> dict[str, Path]:
    copies = {}
    for i, member in enumerate(members):
        copies[member] = out_dir / f"member-{i}"
        with open_member(_find_member(names, member)) as src, open(copies[member], "wb") as dst:
            shutil.copyfileobj(src, dst)
    return copies


def _install(candidate: Path, dest: Path, target: str, url: str) -> None:
    """Move a verified file into place; a file with the wrong checksum is deleted, with its target."""
    digest = sha256_file(candidate)
    if digest != CHECKSUMS[target]:
        candidate.unlink()
        (dest / target).unlink(missing_ok=True)
        raise DownloadError(f"{target}: SHA-256 {digest} of the file from {url} does not match the "
                            f"expected {CHECKSUMS[target]}; the file was deleted")
    (dest / target).parent.mkdir(parents=True, exist_ok=True)
    os.replace(candidate, dest / target)


def _download_source(source: Source, url: str, members: dict[str, str],
                     dest: Path) -> tuple[list[str], list[str]]:
    """Fetch one source and install the given members: (installed targets, problems)."""
    installed, problems = [], []
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        archive = Path(tmp) / "archive"
        try:
            _fetch(url, archive)
            extracted = _extract(archive, source.url, list(members), Path(tmp))
        except (OSError, urllib.error.URLError, zipfile.BadZipFile, tarfile.TarError, DownloadError) as err:
            return [], [f"{', '.join(members.values())}: could not fetch {url}: {err}"]
        for member, candidate in extracted.items():
            try:
                _install(candidate, dest, members[member], url)
                installed.append(members[member])
            except DownloadError as err:
                problems.append(str(err))
    return installed, problems


def download(dest: str | os.PathLike, base_urls: Mapping[str, str] | None = None) -> dict[str, str]:
    """Fetch every downloadable file into ``dest``; returns {target path: 'downloaded' | 'present'}.

    ``base_urls`` replaces the URL of the named :data:`SOURCES` entries (a mirror, or
    a local server in tests). Raises :class:`DownloadError` listing every file that
    could not be fetched or failed its checksum, after trying all the others.
    """
    dest = Path(dest)
    overrides = dict(base_urls or {})
    unknown = set(overrides) - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown sources {sorted(unknown)}; the sources are {', '.join(SOURCES)}")
    dest.mkdir(parents=True, exist_ok=True)
    report: dict[str, str] = {}
    problems: list[str] = []
    for name, source in SOURCES.items():
        missing = {m: t for m, t in source.members.items() if not _is_valid(dest / t, t)}
        report.update({t: "present" for t in source.members.values() if t not in missing.values()})
        if not missing:
            continue
        installed, failed = _download_source(source, overrides.get(name, source.url), missing, dest)
        report.update({t: "downloaded" for t in installed})
        problems += failed
    checksum_file = dest / CHECKSUM_FILE
    if not checksum_file.exists():
        checksum_file.write_text("".join(f"{h}  {p}\n" for p, h in CHECKSUMS.items()), encoding="utf-8")
    if problems:
        raise DownloadError("\n".join(problems))
    return report


def mirror_urls(base: str) -> dict[str, str]:
    """Every source fetched from ``base``/<the file name of its official URL>."""
    return {name: f"{base.rstrip('/')}/{PurePosixPath(s.url).name}" for name, s in SOURCES.items()}


def parser() -> argparse.ArgumentParser:
    """The ``download`` command's arguments."""
    parser = argparse.ArgumentParser(prog="python -m disan download", description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", nargs="?", default=os.environ.get(DATA_ENV) or str(DEFAULT_DATA_DIR),
                        help=f"target folder (default: ${DATA_ENV}, else {DEFAULT_DATA_DIR})")
    parser.add_argument("--mirror", help="fetch every archive from MIRROR/<its file name> instead")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m disan download [DEST] [--mirror URL]``; exit code 1 when a file fails."""
    p = parser()
    args = p.parse_args(argv)
    for folder, why in NOT_DOWNLOADABLE.items():
        print(f"{'skipped':>10}  {folder}/: {why}")
    try:
        report = download(args.dest, mirror_urls(args.mirror) if args.mirror else None)
    except DownloadError as err:
        print(f"download failed:\n{err}", file=sys.stderr)
        return 1
    for target, status in report.items():
        print(f"{status:>10}  {target}")
    return 0
