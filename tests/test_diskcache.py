"""The on-disk result cache (disan.store: the folder, its keys, its codec): exact round trips of every
analysis's result, nothing drawn kept, keys that change with whatever the result depends on, the size bound
(also while other processes delete and write entries), one computation of a key for threads asking at once,
and corrupt entries, or entries of an older layout, computed again."""
import dataclasses
import json
import os
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

import disan
from disan.analyses import atlas
from disan.store import codec, diskcache, keys
from disan.data.checksums import corpus_digest
from disan.data.paths import shipped_checkpoints
from disan.analyses import attribution, casestudy, corpus
from disan.inspect.pipeline import Pipeline
from disan.nn import checkpoint
from disan.render import views

from .conftest import LABELS, make_model

SENTENCES = ["the glass bottle is big", "a man pouring tea", "the restaurant is about to close",
             "the man is big", "a glass of tea", "the biker is about to close the fountain"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder of its own."""
    monkeypatch.setenv(diskcache.DIR_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def assert_same(a, b, where="value"):
    """Equal to the bit: tables with their dtypes and index, arrays with their dtype, dataclasses field by field."""
    assert type(a) is type(b), where
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            assert_same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, where


def results(pipe):
    """One result of each corpus analysis, on a tiny corpus."""
    chosen = corpus.make_corpus("tiny", SENTENCES, ["a", "b", "a", "b", "a", "b"])
    case = casestudy.measure(pipe, chosen.tokens, "tiny")
    mapped = atlas.profile(pipe, chosen.tokens, "tiny", min_count=1)
    return {"senses": corpus.analyse(pipe, chosen, "the", "source2token"),
            "case": case, "findings": casestudy.findings(case, resamples=50),
            "atlas": mapped, "explanation": atlas.explanation(pipe, mapped, chosen.texts, "forward", 0),
            "agreement": attribution.corpus_agreement(pipe, SENTENCES[:3], steps=4)}


@pytest.mark.quick
def test_every_analysis_result_round_trips_exactly(cache, make_checkpoint):
    pipe = disan.load(make_checkpoint())
    for name, value in results(pipe).items():
        key = keys.result_key(name, pipe)
        assert diskcache.fetch(key) is None
        diskcache.store(key, value)
        assert_same(value, diskcache.fetch(key), name)
    mixed = {1: np.float32(2.5), "s": pd.DataFrame({"x": ["a", None], "y": [np.nan, 1.0]}, index=["p", "q"]),
             "t": (1, "two", None, float("inf")), "o": np.array(["a", "bc"], dtype=object)}
    diskcache.store("mixed", mixed)
    assert_same(mixed, diskcache.fetch("mixed"))


@pytest.mark.quick
def test_nothing_but_data_is_stored(cache):
    with pytest.raises(TypeError, match="cannot be stored"):
        diskcache.store("code", {"f": print})
    # what is drawn of a result is drawn again from it: neither a figure nor a drawing nor its parts are kept
    figure, note = go.Figure(go.Heatmap(z=[[0, 1]])), views.Note("nothing to draw")
    drawing = views.Drawing([views.Row({"table": pd.DataFrame({"x": [1]}), "note": note}, "A title")])
    for name, drawn in {"figure": figure, "note": note, "row": drawing.rows[0], "drawing": drawing}.items():
        with pytest.raises(TypeError, match="cannot be stored"):
            diskcache.store(name, drawn)
        assert not diskcache.known(name), name
    diskcache.store("data", [1.0])
    entry = next((cache / "results").glob("*.npz"))
    with np.load(entry, allow_pickle=False) as held:  # readable without unpickling
        assert json.loads(held[codec.MANIFEST].tobytes()) == {"list": [1.0]}
    # a manifest that names a class outside the package, or one of its drawings' classes, is refused, and an
    # entry of an older layout (a figure as plotly's JSON, a drawing) is read as missing: each is dropped
    for manifest in ({"dataclass": "os:DirEntry", "fields": {}},
                     {"dataclass": f"{views.__name__}:Note", "fields": {"text": "nothing to draw"}},
                     {"figure": figure.to_json()}, {"drawing": []}):
        np.savez(entry, manifest=np.frombuffer(json.dumps(manifest).encode(), np.uint8))
        assert diskcache.fetch("data") is None and not entry.exists(), manifest
        diskcache.store("data", [1.0])


def case_key(model, sentences=SENTENCES, seed=0, analysis="case study"):
    """The key of a case study's result by ``model`` (a pipeline or a checkpoint directory)."""
    return keys.result_key(analysis, model, corpus=corpus_digest(sentences), seed=seed)


def test_a_changed_checkpoint_vocabulary_corpus_or_setting_names_another_entry(cache, make_checkpoint, tmp_path):
    path = make_checkpoint()
    pipe = disan.load(path)
    key = case_key(pipe)
    diskcache.store(key, "old")
    assert case_key(disan.load(path)) == key
    # named from the directory alone, as the app loads it (open), the entry is the loaded model's
    assert case_key(path) == case_key(str(path)) == key
    stored = Pipeline(*checkpoint.load(path, vocabulary="stored"), path)
    assert keys.model_digest(stored) == keys.checkpoint_digest(path, "stored")
    others = [case_key(pipe, SENTENCES[1:]), case_key(pipe, seed=1), case_key(pipe, analysis="feature atlas"),
              case_key(stored)]
    # the word vectors an open vocabulary reads, as the checkpoint's config names them: their content counts
    named = tmp_path / "named"
    shutil.copytree(path, named)
    config = json.loads((named / checkpoint.CONFIG).read_text())
    vectors = tmp_path / "v.txt"
    (named / checkpoint.CONFIG).write_text(json.dumps({**config, "vectors": {"source": str(vectors)}}))
    vectors.write_text("tea 0.1 0.2\n")
    others.append(case_key(named))
    stored_keys = [keys.checkpoint_digest(named, "stored")]
    vectors.write_text("tea 0.1 0.3\n")
    others.append(case_key(named))
    stored_keys.append(keys.checkpoint_digest(named, "stored"))
    assert stored_keys[0] == stored_keys[1]  # a stored vocabulary reads no vectors
    # the same weights in another folder give the same key: the content counts, not the path
    model, vocab = make_model("classify")
    other = tmp_path / "elsewhere"
    checkpoint.save(other, model, vocab, {"task": "tiny-classify", "kind": "classify", "labels": LABELS["classify"]},
                    {"test": {"accuracy": 0.5}}, "#\n")
    assert case_key(disan.load(other)) == case_key(other) == key
    # a retrained model: other weights under the same path, whatever its time stamp says
    weights = path / checkpoint.WEIGHTS
    stamp = weights.stat()
    model, vocab = make_model("classify", seed=1)
    checkpoint.save(path, model, vocab, {"task": "tiny-classify", "kind": "classify", "labels": LABELS["classify"]},
                    {"test": {"accuracy": 0.5}}, "#\n")
    os.utime(weights, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1))
    others += [case_key(disan.load(path)), case_key(path)]
    assert others[-1] == others[-2]
    assert len(set(others)) == len(others) - 1 and key not in others
    assert all(diskcache.fetch(k) is None for k in others)
    with pytest.raises(ValueError, match="vocabulary must be one of"):
        keys.checkpoint_digest(path, "grown")


def test_a_shipped_checkpoints_key_needs_no_loaded_model(cache):
    # sst5 opens its vocabulary with the GloVe vectors where they are here, and keeps its words where not
    path = shipped_checkpoints() / "sst5"
    for vocabulary in checkpoint.VOCABULARIES:
        pipe = Pipeline(*checkpoint.load(path, vocabulary=vocabulary), path)
        assert keys.model_digest(pipe) == keys.checkpoint_digest(path, vocabulary), vocabulary
    assert case_key(path) == case_key(disan.load(path))


def test_file_digests_are_remembered_until_the_file_changes(cache, tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(b"one")
    first = keys.file_digest(f)
    index = json.loads((cache / "digests.json").read_text())
    index[str(f.resolve())][2] = "remembered"
    (cache / "digests.json").write_text(json.dumps(index))
    assert keys.file_digest(f) == "remembered"  # not read again
    f.write_bytes(b"two!")
    assert keys.file_digest(f) not in (first, "remembered")


def test_the_cache_stays_within_its_bound_dropping_the_least_recently_read(cache, monkeypatch):
    monkeypatch.setenv(diskcache.BOUND_ENV, str(2.5 * 80_000 / 2**20))  # room for two entries of 80 kB
    for name in ("a", "b"):
        diskcache.store(name, np.zeros(10_000))
    os.utime(diskcache.entry_path("a"), ns=(1, 1))
    os.utime(diskcache.entry_path("b"), ns=(2, 2))
    assert diskcache.fetch("a") is not None  # read: now the most recent
    diskcache.store("c", np.zeros(10_000))
    kept = {p.stem for p in diskcache.entries()}
    assert kept == {"a", "c"}
    assert sum(p.stat().st_size for p in diskcache.entries()) <= diskcache.bound_bytes()
    monkeypatch.setenv(diskcache.BOUND_ENV, "lots")
    with pytest.raises(ValueError, match=diskcache.BOUND_ENV):
        diskcache.bound_bytes()


def trim_while_another_process_deletes(monkeypatch, victim: str, after: int | None) -> tuple[int, set[str]]:
    """Four entries a-d of one size, least recently used first; a trim to room for two and a half while
    another process deletes ``victim``: right after the trim has listed it and before its first look at the
    file (``after`` 0), or right after its look number ``after``; None: nobody deletes it. Returns the trim's
    looks at the victim (os.stat, which Path.exists and Path.is_file call too) and the entries left."""
    for i, name in enumerate("abcd"):
        diskcache.store(name, np.zeros(10_000))  # far below the default bound: nothing trimmed yet
        os.utime(diskcache.entry_path(name), ns=(i + 1, i + 1))
    size = diskcache.entry_path("a").stat().st_size
    real_stat, looks = Path.stat, []

    def stat(path, **kwargs):
        if path != diskcache.entry_path(victim):
            return real_stat(path, **kwargs)
        looks.append(path)
        if after == 0 and len(looks) == 1:
            os.unlink(path)
        seen = real_stat(path, **kwargs)
        if after is not None and len(looks) == after:
            os.unlink(path)
        return seen

    with monkeypatch.context() as patched:
        patched.setattr(Path, "stat", stat)
        diskcache.trim(int(2.5 * size))
    left = {p.stem for p in diskcache.entries()}
    assert sum(diskcache.entry_path(name).stat().st_size for name in left) <= 2.5 * size
    return len(looks), left


def test_a_trim_goes_on_when_another_process_deletes_an_entry_it_has_listed(cache, monkeypatch):
    looks, left = trim_while_another_process_deletes(monkeypatch, "b", None)
    assert looks >= 1 and left == {"c", "d"}
    for after in range(looks + 1):  # every moment between the listing and the trim's last look
        shutil.rmtree(cache)
        assert trim_while_another_process_deletes(monkeypatch, "b", after)[1] == {"c", "d"}, after


@pytest.mark.parametrize("damage", [lambda b: b[: len(b) // 2], lambda b: b"not a zip file", lambda b: b""])
def test_a_corrupt_entry_is_computed_again(cache, damage):
    calls = []

    def compute():
        calls.append(1)
        return {"x": np.arange(5)}
    first = diskcache.cached("k", compute)
    entry = diskcache.entry_path("k")
    entry.write_bytes(damage(entry.read_bytes()))
    again = diskcache.cached("k", compute)
    assert len(calls) == 2
    np.testing.assert_array_equal(first["x"], again["x"])
    assert diskcache.fetch("k") is not None  # stored anew


def test_a_cache_folder_that_cannot_be_written_only_costs_the_computation(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv(diskcache.DIR_ENV, str(blocked / "cache"))
    calls = []
    for _ in range(2):
        assert diskcache.cached("k", lambda: calls.append(1) or [1.5]) == [1.5]
    assert len(calls) == 2 and not diskcache.known("k")
    assert len(keys.file_digest(blocked)) == 64


def test_a_trim_by_another_process_leaves_a_store_being_written_alone(cache, monkeypatch):
    real_replace = os.replace

    def replace(written, path):
        diskcache.trim(0)  # another process's trim, to nothing, while this store's file is written
        real_replace(written, path)

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", replace)
        diskcache.store("k", [1.5])
    assert diskcache.fetch("k") == [1.5]


def test_threads_asking_for_one_key_at_once_compute_it_once(cache):
    calls, release = [], threading.Event()

    def compute():
        calls.append(1)
        release.wait(10)
        return [2.5]

    got = []
    threads = [threading.Thread(target=lambda: got.append(diskcache.cached("k", compute))) for _ in range(4)]
    threads[0].start()
    while not calls:
        time.sleep(0.01)
    for t in threads[1:]:
        t.start()
    deadline = time.time() + 1  # time for the others to reach the computation, were they let through
    while len(calls) < 4 and time.time() < deadline:
        time.sleep(0.01)
    release.set()
    for t in threads:
        t.join()
    assert len(calls) == 1 and got == [[2.5]] * 4
