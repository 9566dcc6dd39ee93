"""Training on one's own files (``python -m disan train --data``): formats, columns, labels, kinds,
recorded and reproduced splits, and one clear line with exit status 1 for every kind of bad file."""
import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from disan.__main__ import run
from disan.data import files
from disan.nn import checkpoint

from .test_app import app, charts

POSITIVE = ["a wonderful moving story", "great acting and a fine plot", "superb and funny", "brilliant work",
            "charming and warm", "beautifully made", "a delight from start to end", "I loved this film"]
NEGATIVE = ["a dull boring story", "bad acting and a weak plot", "awful and tedious", "terrible work",
            "cold and lifeless", "poorly made", "a mess from start to end", "I hated this film"]
ROWS = [(text, "positive") for text in POSITIVE] + [(text, "negative") for text in NEGATIVE]
ROWS = ROWS * 2 + [(f"{t}, really", y) for t, y in ROWS]  # 48 rows, 24 per class, some with commas
WORDS = sorted({w.lower() for text, _ in ROWS for w in text.replace(",", " , ").split()})


@pytest.fixture
def vectors(tmp_path) -> str:
    """A GloVe-format file of the data's words: loads in no time."""
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} " + " ".join(f"{(i * 7 + k) % 11 / 10 - 0.5:.2f}" for k in range(6)) + "\n"
                            for i, w in enumerate(WORDS)), encoding="utf-8")
    return str(path)


def write_csv(path: Path, rows, header=("review", "sentiment"), delimiter=","):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter=delimiter)
        if header:
            writer.writerow(header)
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows, keys=("review", "sentiment")):
    path.write_text("".join(json.dumps(dict(zip(keys, row))) + "\n" for row in rows), encoding="utf-8")
    return path


def tiny(vectors, out) -> list[str]:
    return ["--out", str(out), "--epochs", "1", "--d-h", "6", "--d-fc", "6", "--extra-vocab", "0", "--embeddings",
            vectors, "--no-tensorboard", "--batch-size", "16"]


def train_ok(argv, capsys) -> tuple[dict, str]:
    """The summary line of a run that succeeded, and its stderr."""
    status, seen = run(["train", *argv]), capsys.readouterr()
    assert status == 0, seen.err
    return json.loads(seen.out.strip().splitlines()[-1]), seen.err


@pytest.mark.parametrize("fmt", ["csv", "tsv-by-index", "jsonl"])
def test_each_format_trains_records_its_split_and_reads_it_again(fmt, tmp_path, vectors, capsys):
    if fmt == "csv":
        data, columns = write_csv(tmp_path / "reviews.csv", ROWS), ["review", "sentiment"]
    elif fmt == "jsonl":
        data, columns = write_jsonl(tmp_path / "reviews.jsonl", ROWS), ["review", "sentiment"]
    else:  # no header: columns by 0-based index
        data, columns = write_csv(tmp_path / "reviews.tsv", [(y, t) for t, y in ROWS], None, "\t"), ["1", "0"]
    out = tmp_path / "model"
    summary, _ = train_ok(["--data", str(data), "--text-column", columns[0], "--label-column", columns[1],
                        *tiny(vectors, out)], capsys)
    assert summary["test"]["n"] == summary["dev"]["n"] == 5  # 10% of 48 rows, rounded
    config = json.loads((out / "config.json").read_text())
    assert config["labels"] == ["negative", "positive"] and config["kind"] == "classify"
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    assert config["data"]["files"]["data"]["sha256"] == digest and digest in checkpoint.card(out)
    rows = config["data"]["rows"]
    assert not set(rows["dev"]) & set(rows["test"]) and len(rows["test"]) == 5
    # the recorded rows are rows of the file; reading the record again gives the same test split
    again = files.load_recorded(config["data"])
    assert [e.text for e in again.test] == [ROWS[r][0] for r in rows["test"]]
    assert [again.labels[e.label] for e in again.test] == [ROWS[r][1] for r in rows["test"]]
    assert run(["evaluate", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n"] == 5


def test_a_changed_file_is_not_taken_for_the_recorded_one(tmp_path):
    data = write_csv(tmp_path / "d.csv", ROWS)
    task = files.load_file_task(data, "review", "sentiment")
    write_csv(data, ROWS[::-1])
    with pytest.raises(files.DataError, match="has changed"):
        files.load_recorded(task.source)


def test_splits_are_stratified_and_seeded(tmp_path):
    rows = [(f"text {i}", "rare" if i % 5 == 0 else "common") for i in range(200)]  # 40 rare, 160 common
    data = write_csv(tmp_path / "d.csv", rows)
    task = files.load_file_task(data, "review", "sentiment", dev_fraction=0.2, test_fraction=0.1, seed=3)
    rare = task.labels.index("rare")
    assert (len(task.dev), len(task.test), len(task.train)) == (40, 20, 140)
    assert sum(e.label == rare for e in task.dev) == 8 and sum(e.label == rare for e in task.test) == 4
    same = files.load_file_task(data, "review", "sentiment", dev_fraction=0.2, test_fraction=0.1, seed=3)
    other = files.load_file_task(data, "review", "sentiment", dev_fraction=0.2, test_fraction=0.1, seed=4)
    assert same.source["rows"] == task.source["rows"] != other.source["rows"]
    texts = {e.text for split in (task.train, task.dev, task.test) for e in split}
    assert texts == {t for t, _ in rows}  # every row in exactly one split


def test_integer_labels_are_ordered_by_value_and_dev_test_files_replace_fractions(tmp_path):
    rows = [(f"text {i}", str([10, 2, 1][i % 3])) for i in range(30)]
    data = write_csv(tmp_path / "d.csv", rows)
    dev = write_csv(tmp_path / "dev.csv", rows[:4])
    task = files.load_file_task(data, "review", "sentiment", dev=dev)
    assert task.labels == ["1", "2", "10"]
    assert [e.text for e in task.dev] == [t for t, _ in rows[:4]] and "dev" not in task.source["rows"]
    assert len(task.test) == 3 and len(task.train) == 27


@pytest.mark.parametrize("kind", ["pair", "relatedness"])
def test_pair_and_relatedness_models_train_from_a_file(kind, tmp_path, vectors, capsys, monkeypatch):
    rows = [(a, b, str(1 + (i % 5) * 0.9) if kind == "relatedness" else ["same", "other"][i % 2])
            for i, ((a, _), (b, _)) in enumerate(zip(ROWS, ROWS[1:] + ROWS[:1]))]
    data = write_csv(tmp_path / "pairs.csv", rows, ("premise", "hypothesis", "label"))
    out = tmp_path / kind
    extra = ["--kind", "relatedness"] if kind == "relatedness" else []
    train_ok(["--data", str(data), "--text-column", "premise", "--text-b-column", "hypothesis",
              "--label-column", "label", *extra, *tiny(vectors, out)], capsys)
    config = json.loads((out / "config.json").read_text())
    assert config["kind"] == kind
    assert config["labels"] == (["1", "2", "3", "4", "5"] if kind == "relatedness" else ["other", "same"])
    # the explorer lists the model and traces both sentences on the Attention page
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(tmp_path))
    at = app(checkpoint=kind, premise="a wonderful moving story", hypothesis="a dull boring story")
    assert at.sidebar.selectbox[0].value == kind
    assert {"premise-attention-pair", "hypothesis-attention-pair"} <= set(charts(at))


def test_a_finished_run_keeps_its_state_file_unless_told_not_to(tmp_path, vectors, capsys):
    data = write_csv(tmp_path / "d.csv", ROWS)
    own = ["--data", str(data), "--text-column", "review", "--label-column", "sentiment"]
    train_ok([*own, *tiny(vectors, tmp_path / "kept")], capsys)
    train_ok([*own, *tiny(vectors, tmp_path / "gone"), "--no-keep-state"], capsys)
    assert (tmp_path / "kept.resume.pt").is_file() and (tmp_path / "gone" / "model.safetensors").is_file()
    assert not (tmp_path / "gone.resume.pt").exists()


def test_an_interrupted_run_on_a_file_resumes(tmp_path, vectors, capsys):
    data = write_csv(tmp_path / "d.csv", ROWS)
    argv = ["--data", str(data), "--text-column", "review", "--label-column", "sentiment", *tiny(vectors, tmp_path / "m")]
    train_ok(argv, capsys)
    # a state file written before a setting existed resumes when the setting keeps its default
    state_file = tmp_path / "m.resume.pt"
    state = torch.load(state_file, weights_only=True)
    del state["config"]["test_fraction"]
    torch.save(state, state_file)
    argv[argv.index("--epochs") + 1] = "2"
    assert run(["train", *argv, "--resume", "--test-fraction", "0.2"]) == 1
    assert "test_fraction=0.1, not 0.2" in capsys.readouterr().err
    _, err = train_ok([*argv, "--resume"], capsys)
    assert "resuming at step 3, epoch 1" in err
    history = json.loads((tmp_path / "m" / "metrics.json").read_text())["history"]
    assert [h["epoch"] for h in history] == [1, 2]
    # the same file name with other rows is other data: going on would mix two runs
    write_csv(data, ROWS[1:] + ROWS[:1])
    argv[argv.index("--epochs") + 1] = "3"
    assert run(["train", *argv, "--resume"]) == 1
    err = capsys.readouterr().err
    assert "d.csv changed since the run began" in err and "Traceback" not in err
    assert [h["epoch"] for h in json.loads((tmp_path / "m" / "metrics.json").read_text())["history"]] == [1, 2]


def bad_files(tmp: Path) -> dict[str, tuple[Path, list[str], str]]:
    """name -> (file, extra flags, what the message must say)."""
    (tmp / "empty.csv").write_bytes(b"")
    (tmp / "header.csv").write_text("review,sentiment\n")
    (tmp / "latin1.csv").write_bytes("review,sentiment\n".encode() + b"ok,positive\n" * 3 + b"caf\xe9,negative\n")
    (tmp / "ragged.csv").write_text("review,sentiment\nfine,positive\ntoo,many,fields\n")
    (tmp / "ragged.jsonl").write_text('{"review": "a", "sentiment": "x"}\n{"review": "b"}\n')
    png = tmp / "png.csv"  # an image renamed: its first bytes say what it is
    png.write_bytes(bytes.fromhex("89504e470d0a1a0a0000000d49484452") + bytes(40))
    return {
        "missing file": (tmp / "nothere.csv", [], "no such file"),
        "empty file": (tmp / "empty.csv", [], "is empty"),
        "header only": (tmp / "header.csv", [], "has a header but no rows"),
        "missing column": (write_csv(tmp / "cols.csv", ROWS), ["--text-column", "text"],
                           "no column 'text'; its columns are review, sentiment"),
        "one class": (write_csv(tmp / "one.csv", [(t, "positive") for t, _ in ROWS]), [], "two classes"),
        "too few rows": (write_csv(tmp / "few.csv", ROWS[:2] + ROWS[-1:]), [], "has 3 rows: too few"),
        "empty text": (write_csv(tmp / "blank.csv", ROWS[:5] + [("  ", "positive")]), [], "line 7: the text"),
        "not utf-8": (tmp / "latin1.csv", [], "line 5 is not UTF-8"),
        "ragged csv": (tmp / "ragged.csv", [], "line 3 has 3 fields, the header has 2"),
        "ragged jsonl": (tmp / "ragged.jsonl", [], "line 2 has the keys review"),
        "scores not numbers": (write_csv(tmp / "scores.csv", [(t, t, "high") for t, _ in ROWS], ("review", "b", "sentiment")),
                               ["--text-b-column", "b", "--kind", "relatedness"], "score 'high' is not a number"),
        "unknown format": (write_csv(tmp / "data.xlsx", ROWS), [], "unknown format '.xlsx'"),
        "control character": (write_csv(tmp / "typed.csv", ROWS[:5] + [("a\x1b[1mbold", "positive")]), [],
                              "line 7, column 'review': the text holds the control character U+001B at character 2"),
        "binary": (png, [], "png.csv: this is a PNG image, not a text table"),
    }


CASES = [
    "missing file", "empty file", "header only", "missing column", "one class", "too few rows", "empty text",
    "not utf-8", "ragged csv", "ragged jsonl", "scores not numbers", "unknown format", "control character", "binary"]


@pytest.mark.parametrize("case", CASES)
def test_bad_data_is_one_line_exit_1_and_nothing_written(case, tmp_path, vectors, capsys):
    path, extra, message = bad_files(tmp_path)[case]
    checkpoints = tmp_path / "checkpoints"
    existing = checkpoints / "kept"
    existing.mkdir(parents=True)
    (existing / "config.json").write_text("{}")
    argv = ["--data", str(path), "--text-column", "review", "--label-column", "sentiment",
            *tiny(vectors, existing)]
    argv += extra  # a later --text-column wins
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert run(["train", *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert (existing / "config.json").read_text() == "{}"


def test_bad_data_from_the_shell_has_no_traceback(tmp_path):
    data = tmp_path / "header.csv"
    data.write_text("review,sentiment\n")
    done = subprocess.run([sys.executable, "-m", "disan", "train", "--data", str(data), "--text-column", "review",
                           "--label-column", "sentiment", "--out", str(tmp_path / "m")],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 1 and done.stderr == f"error: {data} has a header but no rows\n"


@pytest.mark.parametrize("argv,message", [
    (["--task", "trec", "--data", "x.csv"], "either --task"),
    ([], "either --task"),
    (["--data", "x.csv", "--text-column", "t"], "--data needs --text-column and --label-column"),
    (["--task", "trec", "--text-column", "t"], "--text-column is for --data"),
])
def test_task_and_data_exclude_each_other(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        run(["train", "--out", "never", *argv])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


# ---------------------------------------------------------------- what the Training page reads of a file

def test_a_preview_is_the_first_rows_as_text_under_the_columns(tmp_path):
    data = write_csv(tmp_path / "d.csv", ROWS)
    table = files.preview(data, n=5)
    assert list(table.columns) == ["review", "sentiment"]
    assert table.values.tolist() == [list(row) for row in ROWS[:5]]
    headless = files.preview(data, header=False, n=2)  # columns by 0-based index, the header a row
    assert list(headless.columns) == ["0", "1"] and headless.values.tolist()[0] == ["review", "sentiment"]
    jsonl = files.preview(write_jsonl(tmp_path / "d.jsonl", [(t, 3) for t, _ in ROWS[:3]], ("t", "stars")))
    assert list(jsonl.columns) == ["t", "stars"] and jsonl["stars"].tolist() == ["3", "3", "3"]


def test_a_preview_reads_no_further_than_it_shows(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("review,sentiment\n" + "fine,positive\n" * 30 + "too,many,fields\n", encoding="utf-8")
    assert len(files.preview(data)) == files.PREVIEW_ROWS  # the ragged line is past the preview
    with pytest.raises(files.DataError, match="line 32 has 3 fields"):
        files.summarize(data, "review", "sentiment")


@pytest.mark.parametrize("case", ["missing file", "empty file", "not utf-8", "unknown format", "binary"])
def test_a_bad_file_has_one_line_for_the_preview(case, tmp_path):
    path, _, message = bad_files(tmp_path)[case]
    with pytest.raises(files.DataError) as error:
        files.preview(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_the_columns_guessed_by_name_else_first_and_last():
    def frame(columns, *rows):
        return pd.DataFrame(list(rows), columns=columns, dtype=object)

    # names first, in any case
    assert files.guess_columns(frame(["id", "Sentence", "extra", "LABEL"], ["r0", "a b", "x y z w", "1"])) \
        == ("Sentence", "LABEL")
    # else the column of the most words, and of the others the fewest distinct values
    reviews = frame(["id", "review", "stars"], ["r0", "a fine long film", "5"], ["r1", "dull and slow", "1"],
                    ["r2", "not bad at all", "5"])
    assert files.guess_columns(reviews) == ("review", "stars")
    assert files.guess_columns(frame(["0", "1", "2"], ["pos", "x y", "a"], ["neg", "z w", "b"])) == ("1", "2")


def test_the_kinds_one_or_two_texts_allow_default_first():
    assert files.kinds_for(None) == ["classify"]
    assert files.kinds_for("hypothesis") == ["pair", "relatedness"]


def test_the_summary_counts_every_row_per_class_and_the_splits(tmp_path):
    rows = [(f"text {i}", "rare" if i % 4 == 0 else "common") for i in range(40)]  # 10 rare, 30 common
    summary = files.summarize(write_csv(tmp_path / "d.csv", rows), "review", "sentiment", test_fraction=0.2)
    assert summary.kind == "classify" and summary.labels == ["common", "rare"] and summary.counts == [30, 10]
    assert summary.splits == {"train": 28, "dev": 4, "test": 8} and summary.rows == 40 and summary.scores == []
    pairs = write_csv(tmp_path / "p.csv", [(t, t, y) for t, y in rows], ("a", "b", "y"))
    assert files.summarize(pairs, "a", "y", "b").kind == "pair"
    with pytest.raises(files.DataError, match="too few"):
        files.summarize(write_csv(tmp_path / "few.csv", rows[:3]), "review", "sentiment")


def test_the_summary_of_relatedness_holds_every_score(tmp_path):
    scores = [1 + (i % 9) / 2 for i in range(45)]  # 1.0 .. 5.0
    data = write_csv(tmp_path / "r.csv", [(f"a {i}", f"b {i}", str(s)) for i, s in enumerate(scores)], ("a", "b", "s"))
    summary = files.summarize(data, "a", "s", "b", "relatedness")
    assert summary.labels == ["1", "2", "3", "4", "5"] and summary.counts == []
    assert sorted(summary.scores) == sorted(scores)


def file_config(tmp_path, rows=ROWS) -> tuple[Path, dict]:
    """A data file and the config a checkpoint trained on it records (as training writes it), untrained."""
    data = write_csv(tmp_path / "reviews.csv", rows)
    task = files.load_file_task(data, "review", "sentiment")
    return data, {"task": task.name, "kind": task.kind, "labels": task.labels, "data": task.source}


def test_a_file_trained_checkpoint_has_its_recorded_test_split_as_corpus(tmp_path):
    from disan.analyses import corpus
    _, config = file_config(tmp_path)
    test = corpus.trained_corpus(config, "test")
    recorded = config["data"]["rows"]["test"]
    assert test.texts == [ROWS[r][0] for r in recorded] and test.labels == [ROWS[r][1] for r in recorded]
    assert test.name == "reviews.csv test"
    items = corpus.trained_items(config, "test", 3)
    assert len(items) == 3 and set(items) <= set(test.texts)


def test_a_changed_or_missing_file_stops_the_corpus_with_its_reason(tmp_path):
    from disan.analyses import corpus
    data, config = file_config(tmp_path)
    write_csv(data, ROWS[:-1] + [("a new last row", "positive")])
    with pytest.raises(files.DataError, match="has changed since the model was trained"):
        corpus.trained_corpus(config)
    with pytest.raises(files.DataError, match="has changed"):
        corpus.trained_items(config)
    data.unlink()
    with pytest.raises(files.DataError, match="is not there any more"):
        corpus.trained_corpus(config)


def test_a_benchmark_checkpoint_has_the_test_fold_it_was_trained_with(data_root):
    from disan.data.registry import load_task
    from disan.analyses import corpus
    test = corpus.trained_corpus({"task": "subj", "kind": "classify", "train_config": {"fold": 3, "seed": 0}})
    assert test.texts == [e.text for e in load_task("subj", fold=3, phrases=False).test]
    assert test.texts != [e.text for e in load_task("subj", fold=0, phrases=False).test]
