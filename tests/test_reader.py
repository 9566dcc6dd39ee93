"""The one table reader: every format through it, whoever reads (``train --data``, ``predict``, the Training
and Corpus senses pages' uploads), one message for a file that is not UTF-8 wherever it is given,
``predict --format``, its usage line and progress units, and the one upload bound, with refused uploads
never kept."""
import csv
import io
import json
import sys
from pathlib import Path

import pytest
import streamlit as st

import disan
from disan.__main__ import run
from disan.data import files
from disan.analyses import corpus
from disan.tools import predict

from .test_app import app, texts, visit
from .test_own_data import ROWS, tiny, vectors, write_csv  # noqa: F401 (vectors is a fixture)
from .test_training_page import status, wait

pytestmark = pytest.mark.quick

TRAINING, CORPUS = "app_pages/training.py", "app_pages/corpus_senses.py"
TEXTS = ["the man is pouring tea", "a biker, big", 'the "glass" bottle', "about to close the restaurant"]
LABELS = ["positive", "negative", "positive", "negative"]
# bytes that are UTF-8 up to line 5, where "café" is written in Windows-1252: its 4th character
LATIN1 = "text,label\nfine,positive\nbad,negative\nok,positive\n".encode() + b"caf\xe9,negative\n"
NOT_UTF8 = ": line 5 is not UTF-8 (byte 0xe9 at character 4); save the file as UTF-8"


def write_tsv(path):
    path.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in zip(TEXTS, LABELS)), encoding="utf-8")


def write_txt(path):
    path.write_text("".join(t + "\n" for t in TEXTS), encoding="utf-8")


# each format written as a person would write it, with the texts (and labels, where the format holds them)
WRITERS = {
    ".csv": lambda path: write_csv(path, list(zip(TEXTS, LABELS)), ("text", "label")),
    ".tsv": write_tsv,
    ".jsonl": lambda path: path.write_text("".join(json.dumps({"text": t, "label": y}) + "\n"
                                                   for t, y in zip(TEXTS, LABELS)), encoding="utf-8"),
    ".txt": write_txt,
}


def test_every_format_of_the_reader_is_written_here():
    assert set(WRITERS) == set(files.FORMATS)  # a new format needs its case below


@pytest.mark.parametrize("suffix", list(WRITERS))
def test_each_format_reads_the_same_for_training_prediction_and_the_corpus(suffix, tmp_path, make_checkpoint,
                                                                          capsys):
    path = tmp_path / f"data{suffix}"
    WRITERS[suffix](path)
    labelled = suffix != ".txt"
    with open(path, "rb") as binary:
        table = files.read_rows(path, binary, suffix, header=True)
        assert [files.cell_text(v[table.columns.index("text")]) for _, _, v in table.rows] == TEXTS

    uploaded = corpus.uploaded_corpus(path.read_bytes(), path.name)
    assert uploaded.texts == TEXTS and uploaded.labels == (LABELS if labelled else [""] * len(TEXTS))

    if labelled:  # what training reads
        read = files.read_labelled(path, "text", "label")
        assert read.texts == TEXTS and read.labels == LABELS
    else:
        with pytest.raises(files.DataError, match="unknown format '.txt'"):
            files.read_labelled(path, "text", "label")

    ck = make_checkpoint("classify")
    assert run(["predict", str(ck), str(path), "--out", str(tmp_path / "out.csv"), "--no-progress"]) == 0
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [r["text"] for r in rows] == TEXTS
    assert [r["prediction"] for r in rows] == [p.label for p in disan.load(ck).predict(TEXTS)]


# ---------------------------------------------------------------- one message for a file that is not UTF-8

@pytest.fixture
def server(tmp_path, monkeypatch):
    """A data folder, an uploads folder and a checkpoints folder."""
    data, ckdir = tmp_path / "data", tmp_path / "checkpoints"
    data.mkdir()
    ckdir.mkdir()
    monkeypatch.setenv("DISAN_DATA_DIR", str(data))
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(ckdir))
    monkeypatch.setenv("DISAN_UPLOADS", str(tmp_path / "uploads"))
    monkeypatch.delenv("DISAN_UPLOAD_MB", raising=False)
    st.cache_resource.clear()  # a fresh job registry
    yield data, ckdir
    st.cache_resource.clear()


def training_upload(at, name=None, data=None):
    """The Training page's uploader, and the file ``name`` uploaded there when given."""
    at.radio(key="train-source").set_value("a file of your own").run()
    at.radio(key="train-file-how").set_value("upload").run()
    if name is not None:
        at.file_uploader(key="train-upload").set_value((name, data, "text/csv")).run()
    assert not at.exception
    return at


def corpus_upload(at, name=None, data=None):
    """The Corpus senses page's uploader, and the file ``name`` uploaded there when given."""
    at.radio(key="_corpus-source").set_value("upload a file").run()
    if name is not None:
        at.file_uploader(key="corpus-upload").set_value((name, data, "text/plain")).run()
    assert not at.exception
    return at


def test_a_file_that_is_not_utf8_has_one_message_naming_its_line_wherever_it_is_given(
        server, make_checkpoint, vectors, capsys, tmp_path):  # noqa: F811 (vectors is a fixture)
    data, ckdir = server
    path = tmp_path / "latin1.csv"
    path.write_bytes(LATIN1)

    assert run(["train", "--data", str(path), "--text-column", "text", "--label-column", "label",
                *tiny(vectors, tmp_path / "m")]) == 1
    assert capsys.readouterr().err == f"error: {path}{NOT_UTF8}\n"

    ck = make_checkpoint("classify", name="checkpoints/tiny")
    assert run(["predict", str(ck), str(path), "--no-progress"]) == 1
    assert capsys.readouterr().err == f"error: {path}{NOT_UTF8}\n"

    at = training_upload(visit(app(), TRAINING), "latin1.csv", LATIN1)
    assert texts(at.error) == f"uploads/latin1.csv{NOT_UTF8}"

    at = corpus_upload(visit(app(), CORPUS), "latin1.csv", LATIN1)
    assert texts(at.error) == f"latin1.csv{NOT_UTF8}"
    with pytest.raises(files.DataError) as error:
        corpus.uploaded_corpus(LATIN1, "latin1.txt")
    assert str(error.value) == f"latin1.txt{NOT_UTF8}"


# ---------------------------------------------------------------- a binary file named as what it is

def made(kind: str, path: Path) -> bytes:
    """The bytes of a real file of ``kind``, written by the library that makes such files."""
    import bz2
    import gzip
    import lzma
    import sqlite3
    import zipfile

    import numpy as np
    from PIL import Image

    if kind in ("PNG", "JPEG", "GIF", "PDF"):
        Image.new("RGB", (4, 4), "red").save(path, format=kind)
    elif kind == "ZIP":  # the parts of a spreadsheet: an .xlsx file is a ZIP archive
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("[Content_Types].xml", "<Types/>")
            z.writestr("xl/workbook.xml", "<workbook/>")
    elif kind == "SQLite":
        with sqlite3.connect(path) as db:
            db.execute("create table t (text, label)")
        db.close()
    elif kind == "NumPy":
        np.save(path.with_suffix(".npy"), np.zeros(3))
        path.with_suffix(".npy").rename(path)
    else:
        pack = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind]
        path.write_bytes(pack(b"text,label\nfine,positive\n"))
    return path.read_bytes()


@pytest.mark.parametrize("kind", ["PNG", "JPEG", "GIF", "PDF", "ZIP", "gzip", "bzip2", "xz", "SQLite", "NumPy"])
def test_a_binary_file_given_as_a_table_is_named_for_what_it_is(kind, tmp_path):
    path = tmp_path / "data.csv"
    made(kind, path)
    with pytest.raises(files.DataError) as error:
        files.preview(path)
    message = str(error.value)
    assert message.startswith(f"{path}: this is a") and kind in message and "not a text table" in message
    assert "UTF-8" not in message.split("(")[0]  # named for what it is, not for its first byte


def test_a_binary_file_has_one_message_wherever_it_is_given(server, make_checkpoint, vectors, capsys, tmp_path):  # noqa: F811
    path = tmp_path / "picture.csv"  # a PNG renamed .csv
    png = made("PNG", path)
    said = ": this is a PNG image, not a text table"
    assert run(["train", "--data", str(path), "--text-column", "text", "--label-column", "label",
                *tiny(vectors, tmp_path / "m")]) == 1
    assert capsys.readouterr().err == f"error: {path}{said}\n"
    ck = make_checkpoint("classify", name="checkpoints/tiny")
    assert run(["predict", str(ck), str(path), "--no-progress"]) == 1
    assert capsys.readouterr().err == f"error: {path}{said}\n"
    assert texts(training_upload(visit(app(), TRAINING), "picture.csv", png).error) == f"uploads/picture.csv{said}"
    assert texts(corpus_upload(visit(app(), CORPUS), "picture.txt", png).error) == f"picture.txt{said}"


def test_a_text_that_merely_starts_like_a_signature_is_read():
    table = files.read_rows("pk.csv", io.BytesIO(b"PK,label\nGIF8 is not a format,x\n"), ".csv", header=True)
    assert table.columns == ["PK", "label"] and [v for _, _, v in table.rows] == [["GIF8 is not a format", "x"]]


# ---------------------------------------------------------------- a control character in a text cell

def test_a_control_character_in_a_text_cell_is_refused_by_line_and_column(server, make_checkpoint, capsys, tmp_path):
    path = tmp_path / "typed.csv"
    path.write_text("text,label\nfine,positive\nsome\x00thing,negative\n", encoding="utf-8")
    said = ": line 3, column 'text': the text holds the control character U+0000 at character 5"
    with pytest.raises(files.DataError) as error:
        files.read_labelled(path, "text", "label")
    assert str(error.value).startswith(f"{path}{said}") and "\n" not in str(error.value)
    ck = make_checkpoint("classify", name="checkpoints/tiny")
    out = tmp_path / "out.csv"
    assert run(["predict", str(ck), str(path), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}{said}") and err.count("\n") == 1 and not out.exists()
    # a control character in the label column is the label's business (the model names its labels)
    path.write_text("text,label\nfine,positive\nfine too,neg\x07\n", encoding="utf-8")
    assert files.read_labelled(path, "text", "label").labels == ["positive", "neg\x07"]
    # the corpus leaves out what it cannot trace and says how many
    uploaded = corpus.uploaded_corpus(b"fine words\nbad\x1bwords\nmore words\n", "lines.txt")
    assert uploaded.texts == ["fine words", "more words"] and uploaded.skipped == 1


# ---------------------------------------------------------------- predict

def test_predict_reads_a_tab_separated_txt_with_format_tsv_and_only_then(make_checkpoint, tmp_path, capsys):
    ck = make_checkpoint("classify")
    predicted = [p.label for p in disan.load(ck).predict(TEXTS)]
    gold = predicted[:3] + [next(label for label in ("negative", "positive") if label != predicted[3])]
    source = tmp_path / "gold.txt"
    source.write_text("".join(f"{y}\t{t}\n" for y, t in zip(gold, TEXTS)), encoding="utf-8")
    out = tmp_path / "out.csv"
    argv = ["predict", str(ck), str(source), "--text-column", "1", "--label-column", "0", "--out", str(out),
            "--no-progress"]
    assert run(argv) == 1  # a .txt is one text per line: no column 1, and the message names --format
    assert ("no column '1'; its columns are text (read as txt, by its extension; its first line has tabs: "
            "read it with --format tsv)") in capsys.readouterr().err and not out.exists()
    assert run([*argv, "--format", "tsv"]) == 0
    assert "accuracy 0.7500 (3 of 4)" in capsys.readouterr().err
    with open(out, newline="", encoding="utf-8") as f:
        assert [r["1"] for r in csv.DictReader(f)] == TEXTS


def test_a_format_the_name_does_not_say_is_named_with_format(make_checkpoint, tmp_path, capsys, monkeypatch):
    ck = make_checkpoint("classify")
    tsv = "".join(f"{y}\t{t}\n" for y, t in zip(LABELS, TEXTS))
    source = tmp_path / "gold.csv"  # tab-separated, named .csv: one column
    source.write_text("label\ttext\n" + tsv, encoding="utf-8")
    assert run(["predict", str(ck), str(source), "--no-progress"]) == 1
    assert "(read as csv, by its extension; its first line has tabs: read it with --format tsv)" in capsys.readouterr().err
    assert run(["predict", str(ck), str(source), "--format", "tsv", "--text-column", "nothere", "--no-progress"]) == 1
    assert "--format" not in capsys.readouterr().err  # the format was named: nothing to suggest
    source = source.rename(tmp_path / "gold.dat")
    assert run(["predict", str(ck), str(source), "--no-progress"]) == 1
    assert "unknown format '.dat'" in (err := capsys.readouterr().err) and "name its format with --format" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(tsv.encode())))
    assert run(["predict", str(ck), "-", "--text-column", "1", "--no-progress"]) == 1
    assert ("(read as txt, the default for standard input; its first line has tabs: read it with --format tsv)"
            in capsys.readouterr().err)
    source = tmp_path / "semicolons.txt"  # neither tabs nor commas: every format is named
    source.write_text("".join(f"{y};{t}\n" for y, t in zip(LABELS, TEXTS)), encoding="utf-8")
    assert run(["predict", str(ck), str(source), "--text-column", "1", "--no-progress"]) == 1
    assert "name its format with --format (csv, tsv, jsonl, txt)" in capsys.readouterr().err


@pytest.mark.parametrize("argv0,usage", [
    ("/home/me/venv/bin/disan", "usage: disan predict "),
    ("C:/venv/Scripts/disan.exe", "usage: disan predict "),  # the console script on Windows
    ("/home/me/disan/__main__.py", "usage: python -m disan predict "),
])
def test_the_usage_line_names_the_command_as_started(argv0, usage, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [argv0])
    assert predict.parser().format_usage().startswith(usage)
    with pytest.raises(SystemExit):
        run(["predict", "--help"])
    assert capsys.readouterr().out.startswith(usage)
    with pytest.raises(SystemExit):
        run(["--help"])
    assert capsys.readouterr().out.startswith(usage.removesuffix("predict "))


@pytest.mark.parametrize("noun,n,seconds,shown", [
    ("sentence", 1, 7.08, "1 sentence [00:07, 7.08 s/sentence]"),
    ("sentence", 640, 2.0, "640 sentences [00:02, 320.0 sentences/s]"),
    ("pair", 2, 4.0, "2 pairs [00:04, 2.00 s/pair]"),
])
def test_the_progress_bar_counts_in_units_that_agree(noun, n, seconds, shown):
    stream = io.StringIO()
    bar = predict.Progress(noun, file=stream, mininterval=0, smoothing=0)
    bar.start_t -= seconds  # as if it had run that long
    bar.update(n)
    bar.close()
    assert stream.getvalue().split("\r")[-1].strip() == shown


def test_one_input_is_counted_in_the_singular(make_checkpoint, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the glass bottle\n")))
    assert run(["predict", str(make_checkpoint("classify")), "-"]) == 0
    bar, summary = capsys.readouterr().err.split("\r")[-1].splitlines()  # the bar as last drawn, the summary
    assert bar.startswith("1 sentence [") and summary.startswith("1 input in ")


# ---------------------------------------------------------------- uploads: one bound, nothing kept when refused

def kept_files(data: Path) -> list[str]:
    return sorted(p.relative_to(data).as_posix() for p in data.rglob("*"))


def test_a_refused_upload_leaves_nothing_behind(server, tmp_path):
    data, _ = server
    one_class = "text,label\n" + "".join(f'"{t}",positive\n' for t, _ in ROWS)
    refused = {"empty.csv": (b"", "uploads/empty.csv is empty"),
               "one.csv": (one_class.encode(), "every row has the label 'positive'"),
               "latin1.csv": (LATIN1, f"uploads/latin1.csv{NOT_UTF8}")}
    at = visit(app(), TRAINING)
    copies = []
    for name, (content, message) in refused.items():
        training_upload(at, name, content)
        assert message in texts(at.error) and not any(b.label == "Start" for b in at.button)
        assert kept_files(tmp_path / "uploads") == []
        copies.append(Path(at.session_state["train-upload-staged"][1]))
    assert [p.exists() for p in copies] == [False, False, True]  # each read from a copy of its own, then gone

    good = "text,label\n" + "".join(f'"{t}",{y}\n' for t, y in ROWS)
    training_upload(at, "good.csv", good.encode())
    assert not at.error and any(b.label == "Start" for b in at.button)
    assert kept_files(tmp_path / "uploads") == ["good.csv"] and kept_files(data) == []  # never in the data folder
    assert (tmp_path / "uploads" / "good.csv").read_bytes() == good.encode()
    assert not copies[-1].exists() and "train-upload-staged" not in at.session_state
    at.radio(key="train-file-how").set_value("pick one kept on the server").run()
    assert at.selectbox(key="train-file").options == ["uploads/good.csv"]


def test_both_uploaders_have_the_one_bound(server, make_checkpoint, monkeypatch):
    data, _ = server
    make_checkpoint("classify", name="checkpoints/tiny")
    bounds = {}
    for limit in (None, "7"):
        if limit:
            monkeypatch.setenv("DISAN_UPLOAD_MB", limit)
        training = training_upload(visit(app(), TRAINING)).file_uploader(key="train-upload")
        senses = corpus_upload(visit(app(), CORPUS)).file_uploader(key="corpus-upload")
        bounds[limit] = (training.proto.max_upload_size_mb, senses.proto.max_upload_size_mb)
        assert f"up to {bounds[limit][0]} MB" in training.label and f"up to {bounds[limit][1]} MB" in senses.label
    assert bounds == {None: (50, 50), "7": (7, 7)}

    # the server's own check, past the browser's: the same message on both pages, nothing kept
    monkeypatch.setenv("DISAN_UPLOAD_MB", "1")
    big = b"text,label\n" + b"a glass,x\n" * (2**20 // 10 + 1)  # just over 1 MB
    refused = [texts(training_upload(visit(app(), TRAINING), "big.csv", big).error),
               texts(corpus_upload(visit(app(), CORPUS), "big.csv", big).error)]
    assert refused[0] == refused[1] and "limited to 1 MB" in refused[0]
    assert kept_files(data) == []


def test_the_training_page_trains_on_an_upload_without_a_benchmark_data_folder(
        tmp_path, vectors, monkeypatch):  # noqa: F811 (vectors is a fixture)
    kept, ckdir = tmp_path / "uploads", tmp_path / "checkpoints"
    monkeypatch.setenv("DISAN_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("DISAN_UPLOADS", str(kept))
    monkeypatch.setenv("DISAN_CHECKPOINTS", str(ckdir))
    st.cache_resource.clear()  # a fresh job registry
    at = visit(app(), TRAINING)
    at.radio(key="train-source").set_value("a file of your own").run()
    at.radio(key="train-file-how").set_value("pick one kept on the server").run()
    assert "upload one" in texts(at.info) and not at.error
    mine = write_csv(tmp_path / "mine.csv", ROWS).read_bytes()
    training_upload(at, "mine.csv", mine)
    assert not at.error and (kept / "mine.csv").read_bytes() == mine
    assert f"Models are saved in {ckdir}," in texts(at.caption)
    at.text_input(key="train-name").input("mine")
    at.text_input(key="train-vectors").input(vectors)
    at.number_input(key="train-epochs").set_value(1)
    at.number_input(key="train-dh").set_value(6)
    next(b for b in at.button if b.label == "Start").click().run()
    wait(at, lambda a: "done" in status(a) or "failed" in status(a))
    assert status(at) == "Job mine: done", texts(at.error)
    assert json.loads((ckdir / "mine" / "config.json").read_text())["data"]["files"]["data"]["path"] == str(
        (kept / "mine.csv").resolve())
    at.radio(key="train-file-how").set_value("pick one kept on the server").run()
    assert at.selectbox(key="train-file").options == ["uploads/mine.csv"]
    st.cache_resource.clear()
