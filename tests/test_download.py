"""The downloader against a local HTTP server serving archives built from the data folder."""
import io
import shutil
import tarfile
import threading
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath

import pytest

from disan.data import download as dl
from disan.data import loaders as data
from disan.data.registry import load_task

pytestmark = pytest.mark.quick

DEAD_URL = "http://127.0.0.1:9/nothing-here"  # port 9 (discard): refused, so any fetch fails
# This archive's files sit under another folder than SOURCES says, to exercise the name fallback.
MOVED = {"sick-full": "SICK release/"}


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """(folder served, base URL) of an HTTP server on a free local port."""
    folder = tmp_path / "served"
    folder.mkdir()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(QuietHandler, directory=str(folder)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def build_archive(name: str, source: dl.Source, root: Path, folder: Path, corrupt: set[str] = frozenset()) -> Path:
    """The file ``source.url`` names, holding the data folder's files at the member paths of SOURCES.

    Targets in ``corrupt`` get one byte changed.
    """
    def content(target: str) -> bytes:
        raw = bytearray((root / target).read_bytes())
        if target in corrupt:
            raw[0] ^= 1
        return bytes(raw)

    path = folder / PurePosixPath(source.url).name
    members = {MOVED.get(name, "") + m: content(t) for m, t in source.members.items()}
    if path.name.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("__MACOSX/._decoy", b"not a data file")
            for member, raw in members.items():
                zf.writestr(member, raw)
    elif path.name.endswith(".tar.gz"):
        with tarfile.open(path, "w:gz") as tf:
            for member, raw in members.items():
                info = tarfile.TarInfo(member)
                info.size = len(raw)
                tf.addfile(info, io.BytesIO(raw))
    else:
        path.write_bytes(next(iter(members.values())))
    return path


def leftovers(dest: Path) -> list[Path]:
    return [p for p in dest.rglob("*") if p.name.startswith(".download-") or p.name.startswith("member-")]


def test_download_builds_the_data_layout(data_root, server, tmp_path, capsys):
    folder, base = server
    for name, source in dl.SOURCES.items():
        build_archive(name, source, data_root, folder)
    dest = tmp_path / "data"
    (dest / "TREC").mkdir(parents=True)
    (dest / "TREC" / "TREC_10.label").write_bytes(b"stale copy\n")  # a wrong file is fetched again

    assert dl.main([str(dest), "--mirror", base]) == 0
    targets = [t for s in dl.SOURCES.values() for t in s.members.values()]
    printed = capsys.readouterr().out
    assert all(f"downloaded  {t}" in printed for t in targets) and "SNLI" in printed
    for target in targets:
        assert (dest / target).read_bytes() == (data_root / target).read_bytes(), target
    assert (dest / data.CHECKSUM_FILE).read_bytes() == (data_root / data.CHECKSUM_FILE).read_bytes()
    assert {t for t, ok in data.verify_checksums(dest).items() if not ok} == set(dl.CHECKSUMS) - set(targets)
    assert leftovers(dest) == []
    assert len(load_task("trec", data_dir=dest).test) == 500

    # everything is present now: nothing is fetched, so unreachable sources do not matter
    report = dl.download(dest, {name: DEAD_URL for name in dl.SOURCES})
    assert report == {t: "present" for t in targets}


def test_bad_files_are_deleted_and_reported(data_root, server, tmp_path):
    folder, base = server
    dest = tmp_path / "data"
    for target in dl.CHECKSUMS:
        if not target.startswith(("SST/", "SICK/SICK_trial", "TREC/TREC_10", "SNLI/")):
            (dest / target).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(data_root / target, dest / target)
    (dest / "SICK" / "readme.txt").unlink()
    trec = build_archive("trec-test", dl.SOURCES["trec-test"], data_root, folder, corrupt={"TREC/TREC_10.label"})
    sick = build_archive("sick-trial", dl.SOURCES["sick-trial"], data_root, folder, corrupt={"SICK/SICK_trial.txt"})
    urls = {name: DEAD_URL for name in dl.SOURCES}
    urls.update({"trec-test": f"{base}/{trec.name}", "sick-trial": f"{base}/{sick.name}"})

    with pytest.raises(dl.DownloadError) as err:
        dl.download(dest, urls)
    message = str(err.value)
    for target in ("TREC/TREC_10.label", "SICK/SICK_trial.txt"):
        assert f"{target}: SHA-256" in message and dl.CHECKSUMS[target] in message
        assert not (dest / target).exists()
    assert "SST/train.txt, SST/dev.txt, SST/test.txt: could not fetch" in message
    assert (dest / "SICK" / "readme.txt").read_bytes() == (data_root / "SICK" / "readme.txt").read_bytes()
    assert not (dest / "SST").exists() and leftovers(dest) == []
    assert message.count("\n") == 2  # exactly the three problems, one per line


def test_checksum_table_matches_the_data_folder(data_root):
    assert dl.CHECKSUMS == data.parse_checksums((data_root / data.CHECKSUM_FILE).read_text(encoding="utf-8"))
    targets = [t for s in dl.SOURCES.values() for t in s.members.values()]
    assert len(targets) == len(set(targets)) and set(targets) <= set(dl.CHECKSUMS)
    assert set(dl.CHECKSUMS) - set(targets) == {t for t in dl.CHECKSUMS if t.startswith("SNLI/")}


def test_unknown_source_names_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="sst"):
        dl.download(tmp_path, {"imdb": DEAD_URL})
