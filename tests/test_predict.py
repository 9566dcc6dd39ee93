"""Batch prediction (``python -m disan predict``): formats in and out, streaming in chunks and batches,
standard input, pairs and scores, accuracy against a label column, and bad input refused with nothing written."""
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import disan
from disan.__main__ import run
from disan.tools.predict import predict_file

pytestmark = pytest.mark.quick

ROOT = Path(__file__).resolve().parents[1]
SENTENCES = ["the man is pouring tea", "a biker is big", "the glass bottle", "about to close the restaurant",
             "a fountain", "the tea is big , the man is a biker", "close", "the restaurant of the glass fountain"]


def read_csv(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_csv_in_csv_out_keeps_the_columns_and_adds_the_predictions(make_checkpoint, tmp_path, capsys):
    ck = make_checkpoint("classify")
    source = tmp_path / "in.csv"
    with open(source, "w", newline="") as f:
        csv.writer(f).writerows([("id", "sentence")] + [(i, s) for i, s in enumerate(SENTENCES)])
    assert run(["predict", str(ck), str(source), "--text-column", "sentence", "--no-progress"]) == 0
    rows = read_csv(capsys.readouterr().out)
    labels = ["negative", "positive", "neutral"]
    assert list(rows[0]) == ["id", "sentence", "prediction", *(f"p_{label}" for label in labels)]
    expected = disan.load(ck).predict(SENTENCES)
    assert [r["sentence"] for r in rows] == SENTENCES and [r["id"] for r in rows] == [str(i) for i in range(8)]
    for row, pred in zip(rows, expected):
        assert row["prediction"] == pred.label
        assert [float(row[f"p_{label}"]) for label in labels] == pytest.approx(
            [pred.probs[label] for label in labels], abs=1e-5)


def test_a_stream_longer_than_a_chunk_comes_out_in_input_order(make_checkpoint):
    ck = make_checkpoint("classify")
    pipe = disan.load(ck)
    texts = [SENTENCES[(i * 5) % 8] + " tea" * (i % 7) for i in range(50)]
    out = io.StringIO()
    source = io.BytesIO("".join(t + "\n" for t in texts).encode())
    with pytest.MonkeyPatch.context() as m:
        m.setattr(sys, "stdout", out)
        n, _, _ = predict_file(pipe, source, "in.txt", ".txt", None, batch_size=4, chunk_rows=7, progress=False)
    rows = read_csv(out.getvalue())
    assert n == len(rows) == 50 and [r["text"] for r in rows] == texts
    assert [r["prediction"] for r in rows] == [p.label for p in pipe.predict(texts)]


def test_standard_input_to_a_jsonl_file(make_checkpoint, tmp_path):
    ck, out = make_checkpoint("classify"), tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "disan", "predict", str(ck), "-", "--out", str(out)], cwd=ROOT,
                          input="\n".join(SENTENCES[:3]) + "\n", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["text"] for r in rows] == SENTENCES[:3]
    assert all(abs(r["p_negative"] + r["p_positive"] + r["p_neutral"] - 1) < 1e-5 for r in rows)
    assert "3 inputs" in done.stderr and "sentences/s" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "tiny-classify"]  # no temporary file left


@pytest.mark.parametrize("kind", ["pair", "relatedness"])
def test_pairs_from_jsonl_keep_their_types(kind, make_checkpoint, tmp_path, capsys):
    ck = make_checkpoint(kind)
    source = tmp_path / "pairs.jsonl"
    pairs = list(zip(SENTENCES, SENTENCES[1:]))
    source.write_text("".join(json.dumps({"n": i, "a": a, "b": b}) + "\n" for i, (a, b) in enumerate(pairs)))
    out = tmp_path / "out.jsonl"
    assert run(["predict", str(ck), str(source), "--text-column", "a", "--text-b-column", "b", "--out", str(out),
                "--no-progress"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    expected = disan.load(ck).predict(pairs)
    assert [r["n"] for r in rows] == list(range(len(pairs)))
    if kind == "relatedness":
        assert [r["score"] for r in rows] == pytest.approx([p.score for p in expected], abs=1e-4)
        assert "prediction" not in rows[0]
    else:
        assert [r["prediction"] for r in rows] == [p.label for p in expected]


def test_a_label_column_reports_the_accuracy(make_checkpoint, tmp_path, capsys):
    ck = make_checkpoint("classify")
    predicted = [p.label for p in disan.load(ck).predict(SENTENCES)]
    gold = predicted[:5] + [next(label for label in ("negative", "positive") if label != p) for p in predicted[5:]]
    source = tmp_path / "gold.tsv"
    source.write_text("".join(f"{y}\t{s}\n" for y, s in zip(gold, SENTENCES)))  # no header: columns by index
    assert run(["predict", str(ck), str(source), "--text-column", "1", "--label-column", "0", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "accuracy 0.6250 (5 of 8)" in err


@pytest.mark.parametrize("case,message", [
    ("unknown label", "line 3: the label 'great' is not one the model knows (negative, positive, neutral)"),
    ("empty text", "line 3: the text in column 'sentence' is empty"),
    ("missing column", "no column 'text'; its columns are sentence, gold"),
    ("second text for a sentence model", "this model takes one text"),
    ("control character", "line 3, column 'sentence': the text holds the control character U+0000 at character 2"),
])
def test_bad_input_is_one_line_and_leaves_no_output(case, message, make_checkpoint, tmp_path, capsys):
    ck = make_checkpoint("classify")
    source = tmp_path / "in.csv"
    last = {"empty text": ",great\n", "control character": "a\x00man,great\n"}.get(case, "a man,great\n")
    source.write_text("sentence,gold\nthe tea,negative\n" + last)
    out = tmp_path / "out.csv"
    argv = {"unknown label": ["--text-column", "sentence", "--label-column", "gold"],
            "empty text": ["--text-column", "sentence"],
            "control character": ["--text-column", "sentence"],
            "missing column": [],
            "second text for a sentence model": ["--text-column", "sentence", "--text-b-column", "gold"]}[case]
    assert run(["predict", str(ck), str(source), "--out", str(out), "--no-progress", *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "tiny-classify"]
