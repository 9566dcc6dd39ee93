"""The loaders against the counts documented in shared/data/README.md, and the decoding rules."""
from collections import Counter
from functools import lru_cache

import numpy as np
import pytest

from disan.data import loaders as data
from disan.data.loaders import (
    Example,
    decode_line,
    parse_tree,
    read_lines,
    read_trees,
)
from disan.data.registry import BENCHMARKS, load_task

pytestmark = pytest.mark.quick

C1_CONTROLS = {chr(c) for c in range(0x80, 0xA0)}  # what an undecoded cp1252 byte would leave behind


@lru_cache(maxsize=None)
def task(name: str, **kwargs) -> data.TaskData:
    """Each task is loaded once for the whole module (SST takes about a second)."""
    return load_task(name, **kwargs)


def label_counts(examples: list[Example], n: int) -> list[int]:
    counts = Counter(e.label for e in examples)
    return [counts[k] for k in range(n)]


def all_texts(t: data.TaskData) -> list[str]:
    return [s for e in t.train + t.dev + t.test for s in ((e.text,) if isinstance(e.text, str) else e.text)]


# ---------------------------------------------------------------- locating and checking files

def test_every_file_matches_its_checksum(data_root):
    result = data.verify_checksums()
    assert len(result) == 24 and all(result.values())


def test_a_changed_or_missing_file_fails_its_checksum(data_root, tmp_path):
    (tmp_path / "TREC").mkdir()
    (tmp_path / "SHA256SUMS").write_bytes((data_root / "SHA256SUMS").read_bytes())
    original = (data_root / "TREC" / "TREC_10.label").read_bytes()
    (tmp_path / "TREC" / "TREC_10.label").write_bytes(original)
    (tmp_path / "TREC" / "train_5500.label").write_bytes((data_root / "TREC" / "train_5500.label").read_bytes()[:-1])
    result = data.verify_checksums(tmp_path)
    assert result["TREC/TREC_10.label"] and not result["TREC/train_5500.label"] and not result["SST/train.txt"]


def test_data_dir_order_and_error(data_root, tmp_path, monkeypatch):
    monkeypatch.delenv(data.DATA_ENV, raising=False)
    assert data.data_dir(tmp_path) == tmp_path
    monkeypatch.setenv(data.DATA_ENV, str(tmp_path))
    assert data.data_dir() == tmp_path
    assert data.data_dir(data_root) == data_root  # an explicit path wins over the environment
    with pytest.raises(FileNotFoundError, match=data.DATA_ENV):
        data.data_dir(tmp_path / "absent")

    monkeypatch.delenv(data.DATA_ENV)
    monkeypatch.setattr(data, "DEFAULT_DATA_DIR", tmp_path / "no-repo-data")
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    assert data.data_dir() == tmp_path / "shared" / "data"  # ../shared/data from the current directory
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as err:
        data.data_dir()
    message = str(err.value)
    assert "no-repo-data" in message and data.DATA_ENV in message and "python -m disan download" in message


def test_unknown_task_lists_the_valid_names():
    with pytest.raises(ValueError) as err:
        load_task("sst-7")
    assert all(name in str(err.value) for name in BENCHMARKS)
    assert set(BENCHMARKS) == {"sst5", "sst2", "trec", "subj", "mpqa", "cr", "mr", "sick", "sick-e", "snli"}


# ---------------------------------------------------------------- decoding

def test_decode_line_per_line_choice():
    assert decode_line("café “ok” 😀".encode("utf-8")) == "café “ok” 😀"
    assert decode_line(b"\x93quoted\x94 \x85 caf\xe9 \x96") == "“quoted” … café –"
    assert decode_line(b"sister\xf0city") == "sisterðcity"
    assert decode_line(b"\x81\x8d") == "\x81\x8d"  # undefined in cp1252: kept as Latin-1, not lost


def test_read_lines_strips_terminators_and_bom_and_keeps_every_line(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"\xef\xbb\xbfutf8 \xc3\xa9\r\n\r\ncp1252 \xe9\x85\nlast without newline")
    assert read_lines(path) == ["utf8 é", "", "cp1252 é…", "last without newline"]
    path.write_bytes(b"a\n\n")
    assert read_lines(path) == ["a", ""]
    path.write_bytes(b"")
    assert read_lines(path) == []


def test_windows_1252_files_decode_to_the_right_characters(data_root):
    for name in ("mr", "subj"):
        text = "".join(all_texts(task(name)))
        assert not C1_CONTROLS & set(text) and "\ufffd" not in text
    raw = (data_root / "MR" / "rt-polarity.pos").read_bytes().split(b"\n")
    decoded = read_lines(data_root / "MR" / "rt-polarity.pos")
    for byte, char in ((b"\x85", "…"), (b"\x97", "—"), (b"\x96", "–"), (b"\x91", "‘"), (b"\xe9", "é")):
        number = next(i for i, line in enumerate(raw) if byte in line)
        assert decoded[number].count(char) == raw[number].count(byte)
    assert "amélie" in " ".join(all_texts(task("mr")))


def test_crlf_and_bom_are_removed(data_root):
    assert len(read_lines(data_root / "SICK" / "SICK_test_annotated.txt")) == 4928
    assert len(read_lines(data_root / "SICK" / "SICK.txt")) == 9841  # 9,840 newlines, no final one
    readme = read_lines(data_root / "SICK" / "readme.txt")
    assert len(readme) == 41 and not readme[0].startswith("\ufeff") and readme[0].strip()
    for name in ("sick", "sick-e"):
        assert not any("\r" in s for s in all_texts(task(name)))


# ---------------------------------------------------------------- SST

def test_parse_tree_spans_and_escapes():
    tree = parse_tree("(3 (2 -LRB-) (4 (3 8\u00a01\\/2) (2 (2 ``) (2 ok))))")
    assert tree.words == ["(", "8\u00a01/2", '"', "ok"]  # a no-break space does not split a leaf
    assert tree.spans == [(3, 0, 4), (2, 0, 1), (4, 1, 4), (3, 1, 2), (2, 2, 4), (2, 2, 3), (2, 3, 4)]
    assert tree.text() == '( 8\u00a01/2 " ok' and tree.text(2, 4) == '" ok'


@pytest.mark.parametrize("line", ["(3 (2 a)", "(3 (2 a)) (2 b)", "(x a)", "(2 a (2 b))", "(2 (2 a) b)",
                                  "a", "(2 )", ""])
def test_parse_tree_rejects_malformed_lines(line):
    with pytest.raises(ValueError):
        parse_tree(line)


@pytest.mark.parametrize("split, nodes, leaves", [("train", 318_582, 163_560), ("dev", 41_447, 21_274),
                                                  ("test", 82_600, 42_405)])
def test_sst_tree_counts(data_root, split, nodes, leaves):
    trees = read_trees(data_root / "SST" / f"{split}.txt")
    assert sum(len(t.spans) for t in trees) == nodes
    assert all(0 <= label <= 4 for t in trees for label, _, _ in t.spans)
    # Three train leaves hold a no-break space ("8\u00a01/2"), one word each in the trees;
    # the README's leaf count splits on any whitespace and so leaves them out.
    with_nbsp = sum("\u00a0" in w for t in trees for w in t.words)
    assert sum(len(t.words) for t in trees) - with_nbsp == leaves
    assert with_nbsp == (3 if split == "train" else 0)


def test_sst5_sentence_label_counts(data_root):
    sentences = task("sst5", phrases=False)
    assert label_counts(sentences.train, 5) == [1092, 2218, 1624, 2322, 1288]
    assert label_counts(sentences.dev, 5) == [139, 289, 229, 279, 165]
    assert label_counts(sentences.test, 5) == [279, 633, 389, 510, 399]
    assert task("sst5").dev == sentences.dev and task("sst5").test == sentences.test


def test_sst2_drops_neutral_and_merges_polarities(data_root):
    binary = task("sst2", phrases=False)
    assert binary.labels == ["negative", "positive"]
    assert label_counts(binary.train, 2) == [1092 + 2218, 2322 + 1288]
    assert label_counts(binary.dev, 2) == [139 + 289, 279 + 165]
    assert label_counts(binary.test, 2) == [279 + 633, 510 + 399]
    assert len(binary.train) + len(binary.dev) + len(binary.test) == 6_920 + 872 + 1_821


def test_sst_phrases_are_unique_and_agree_with_the_sentences(data_root):
    phrases = {e.text: e.label for e in task("sst5").train}
    assert len(phrases) == len(task("sst5").train) > 10 * 8_544
    assert all(phrases[e.text] == e.label for e in task("sst5", phrases=False).train)
    binary = {e.text: e.label for e in task("sst2").train}
    assert binary == {text: int(label > 2) for text, label in phrases.items() if label != 2}


def test_sst_text_has_ptb_escapes_undone(data_root):
    raw = (data_root / "SST" / "train.txt").read_text(encoding="utf-8")
    sentences = [e.text for e in task("sst5", phrases=False).train]
    joined = "\n".join(sentences)
    assert joined.count("(") == raw.count("-LRB-") > 0 and joined.count(")") == raw.count("-RRB-")
    assert joined.count('"') == raw.count("``") + raw.count("''") > 0
    assert not any(marker in joined for marker in ("-LRB-", "-RRB-", "\\/", "\\*", "``"))
    assert joined.count("é") == raw.count("é") > 0  # UTF-8 lines are not read as cp1252
    assert sentences[0].startswith("The Rock is destined to be the 21st Century 's new \" Conan \"")


# ---------------------------------------------------------------- TREC

def test_trec_coarse_counts_and_seeded_dev(data_root):
    trec = task("trec")
    assert trec.labels == ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]
    assert label_counts(trec.train + trec.dev, 6) == [86, 1162, 1250, 1223, 835, 896]
    assert label_counts(trec.test, 6) == [9, 138, 94, 65, 81, 113]
    assert len(trec.dev) == 545
    assert task("trec", seed=0).dev == load_task("trec", seed=0).dev
    assert task("trec", seed=1).dev != trec.dev
    assert "sisterðcity" in " ".join(e.text for e in trec.train + trec.dev)
    for line, example in zip(read_lines(data_root / "TREC" / "TREC_10.label"), trec.test):
        tag, text = line.split(" ", 1)
        assert tag.startswith(trec.labels[example.label] + ":") and example.text == text.strip()


# ---------------------------------------------------------------- cross-validation tasks

CV_TOTALS = {"subj": (5_000, 5_000), "mpqa": (7_294, 3_312), "cr": (1_368, 2_407), "mr": (5_331, 5_331)}


def test_cv_folds_partition_and_depend_on_the_seed():
    folds = data.cv_folds(10_606, seed=0)
    assert len(folds) == 10 and {len(f) for f in folds} == {1060, 1061}
    assert np.array_equal(np.sort(np.concatenate(folds)), np.arange(10_606))
    assert all(np.array_equal(a, b) for a, b in zip(folds, data.cv_folds(10_606, seed=0)))
    assert not np.array_equal(folds[0], data.cv_folds(10_606, seed=1)[0])


@pytest.mark.parametrize("name", list(CV_TOTALS))
def test_cross_validation_tasks(data_root, name):
    negative, positive = CV_TOTALS[name]
    first = task(name)
    everything = Counter((e.text, e.label) for e in first.train + first.dev + first.test)
    assert sum(everything.values()) == negative + positive
    assert label_counts(first.train + first.dev + first.test, 2) == [negative, positive]
    tests = Counter()
    for fold in range(10):
        split = task(name, fold=fold)
        tests.update((e.text, e.label) for e in split.test)
        rest = Counter((e.text, e.label) for e in split.train + split.dev)
        assert rest + Counter((e.text, e.label) for e in split.test) == everything
        assert len(split.dev) == round(0.1 * (len(split.train) + len(split.dev)))
    assert tests == everything  # the ten test folds partition the data
    assert task(name, seed=1).test != first.test
    with pytest.raises(ValueError):
        load_task(name, fold=10)


def test_blank_lines_are_kept_as_examples(data_root):
    """CR and MPQA hold blank lines; SentEval's counts (3,775 and 10,606) include them."""
    for name, folder in (("cr", "CR"), ("mpqa", "MPQA")):
        blank = sum(line.strip() == b"" for f in (data_root / folder).iterdir()
                    for line in f.read_bytes().split(b"\n")[:-1])
        t = task(name)
        assert blank > 0 and sum(e.text == "" for e in t.train + t.dev + t.test) == blank


# ---------------------------------------------------------------- pairs

def test_sick_counts_and_scores(data_root):
    entail, related = task("sick-e"), task("sick")
    assert entail.kind == "pair" and related.kind == "relatedness"
    assert entail.labels == ["entailment", "neutral", "contradiction"]
    assert related.labels == ["1", "2", "3", "4", "5"]
    assert label_counts(entail.train, 3) == [1299, 2536, 665]
    assert label_counts(entail.dev, 3) == [144, 282, 74]
    assert label_counts(entail.test, 3) == [1414, 2793, 720]
    for split in ("train", "dev", "test"):
        scores = [e.label for e in getattr(related, split)]
        assert all(isinstance(s, float) for s in scores) and (min(scores), max(scores)) == (1.0, 5.0)
        assert [e.text for e in getattr(related, split)] == [e.text for e in getattr(entail, split)]
    premise, hypothesis = entail.train[0].text
    assert premise.startswith("A group of kids") and hypothesis.startswith("A group of boys")


def test_snli_dev_and_test_only(data_root):
    snli = task("snli")
    assert snli.train == [] and "train" in snli.protocol and "empty" in snli.protocol
    assert label_counts(snli.dev, 3) == [3329, 3235, 3278]
    assert label_counts(snli.test, 3) == [3368, 3219, 3237]
    assert all(isinstance(e.text, tuple) and len(e.text) == 2 and e.text[0] == e.text[0].strip()
               for e in snli.dev + snli.test)


# ---------------------------------------------------------------- reading only the splits asked for

@pytest.mark.usefixtures("data_root")
@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_a_split_read_alone_equals_that_split_read_with_the_others(name):
    """The pages read one split of a checkpoint's benchmark; where each split is a file of its own, only that
    file is read, and a split carved out of another file (TREC's dev, the folds) is drawn exactly as before."""
    options = {"fold": 2, "seed": 3} if BENCHMARKS[name].folds else {"seed": 3}
    whole = task(name, phrases=False, **options)
    for split in data.SPLITS:
        alone = load_task(name, phrases=False, splits=[split], **options)
        assert getattr(alone, split) == getattr(whole, split), split  # texts and labels, in order
        assert (alone.name, alone.kind, alone.labels, alone.protocol) == \
            (whole.name, whole.kind, whole.labels, whole.protocol)


@pytest.mark.usefixtures("data_root")
def test_the_test_split_of_sst_leaves_the_training_trees_unread(monkeypatch):
    read = []
    monkeypatch.setattr(data, "read_trees", lambda path: read.append(path.name) or [])
    load_task("sst5", phrases=False, splits=["test"])
    assert read == ["test.txt"]


def test_an_unknown_split_is_refused_by_name():
    with pytest.raises(ValueError, match="'validation'.*train, dev, test"):
        load_task("sst5", splits=["validation"])
