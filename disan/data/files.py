"""Datasets from one's own files, and the package's one table reader: every file a visitor or the command
line gives (``train --data``, ``predict``, the Training and Corpus senses pages' uploads) is read by
:func:`read_rows` in one of :data:`FORMATS`, with one clear message for each way a file can be wrong;
then its columns, labels and seeded stratified splits.

Formats, by extension (or, for ``predict``, named by ``--format`` whatever the extension):

* ``.csv``: comma-separated, RFC 4180 quoting (a field may hold commas, quotes and line breaks);
* ``.tsv``: one row per line, fields split at tabs, no quoting;
* ``.jsonl``: one JSON object per line (columns are its keys), or one JSON array (columns are indices);
* ``.txt``: one text per line, a single column named ``text`` (no labels: not for training).

A column is named by its header, or by a 0-based index for a file without a header: a CSV or TSV file
whose columns are all given as numbers is read as having no header row. Every file must be UTF-8 (a BOM
is allowed): a line that is not is refused, by its number, and a file that starts as a known binary format
does (:data:`BINARY_SIGNATURES`: an image, a PDF, a spreadsheet) is named as what it is. A text cell holding a
character no sentence has (:func:`disan.data.text.check_characters`) is refused by its line and column. Rows are
counted from 0, the header left out; messages name the file's line.
"""
from __future__ import annotations

import csv
import itertools
import json
import math
import os
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from disan.data.checksums import sha256_file
from disan.data.choices import DEFAULT_FRACTION, SPLITS, TABLES
from disan.data.kinds import kind_of, kinds_taking
from disan.data.loaders import Example, TaskData
from disan.data.registry import load_task
from disan.data.text import check_characters

CHUNK_ROWS = 4096                    # rows per chunk when a file is streamed
PREVIEW_ROWS = 20                    # rows a preview shows
TEXT_COLUMNS = ("text", "sentence", "sentences")  # column names taken for the texts unless told otherwise
LABEL_COLUMNS = ("label", "gold", "class")        # and for the labels


class DataError(ValueError):
    """A data file that cannot be used; the message, one line, says which file, where, and why."""


# ---------------------------------------------------------------- reading rows

# How files that are not text begin, and what they are: a table file that begins so is refused as what it is (a
# PNG renamed .csv) rather than by the first byte that is not UTF-8 (or, for a PDF, by a later line). None holds
# a line break but the PNG's at its end, so each is matched at the start of the file's first line.
BINARY_SIGNATURES = {
    b"\x89PNG\r\n": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF87a": "a GIF image",
    b"GIF89a": "a GIF image",
    b"II*\x00": "a TIFF image",
    b"MM\x00*": "a TIFF image",
    b"RIFF": "a RIFF file (a WebP image, WAV sound or AVI video)",
    b"%PDF-": "a PDF document",
    b"PK\x03\x04": "a ZIP archive (an Excel .xlsx or Word .docx file is one: save a sheet as CSV UTF-8)",
    b"PK\x05\x06": "an empty ZIP archive",
    b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1": "an Office 97-2003 document (.xls, .doc: save a sheet as CSV UTF-8)",
    b"\x1f\x8b": "a gzip-compressed file (decompress it first)",
    b"BZh91AY&SY": "a bzip2-compressed file (decompress it first)",
    b"\xfd7zXZ\x00": "an xz-compressed file (decompress it first)",
    b"(\xb5/\xfd": "a Zstandard-compressed file (decompress it first)",
    b"7z\xbc\xaf\x27\x1c": "a 7-Zip archive",
    b"SQLite format 3\x00": "an SQLite database",
    b"PAR1": "a Parquet file",
    b"\x93NUMPY": "a NumPy array (.npy)",
    b"\x7fELF": "a program (ELF)",
}


def binary_format(start: bytes) -> str | None:
    """What a file that begins with ``start`` is, by :data:`BINARY_SIGNATURES`, or None for none of them."""
    return next((what for signature, what in BINARY_SIGNATURES.items() if start.startswith(signature)), None)


def text_lines(binary) -> Iterator[tuple[int, str]]:
    """(1-based line number, line with its terminator) of a binary stream, decoded as strict UTF-8; DataError for
    a line that is not, and for a stream that begins as a binary format (:func:`binary_format`)."""
    for number, raw in enumerate(binary, start=1):
        if number == 1:
            what = binary_format(raw)
            if what is not None:
                raise DataError(f"this is {what}, not a text table")
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DataError(f"line {number} is not UTF-8 (byte 0x{raw[e.start]:02x} at character {e.start + 1}); "
                            f"save the file as UTF-8") from None


def _delimited_rows(lines, **options):
    """(first line, fields) of each CSV / TSV row (``options`` of :func:`csv.reader`); blank lines are skipped."""
    starts = []

    def feed():
        for number, line in lines:
            starts.append(number)
            yield line
    reader = csv.reader(feed(), strict=True, **options)
    try:
        for fields in reader:
            first = starts[0]
            starts.clear()
            if fields:
                yield first, fields
    except csv.Error as e:
        raise DataError(f"line {reader.line_num}: {e}") from None


def _jsonl_rows(lines):
    """(line, object or array) of each JSON line; blank lines are skipped."""
    for number, line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(f"line {number} is not JSON: {e.msg}") from None
        if not isinstance(value, (dict, list)):
            raise DataError(f"line {number} is not a JSON object or array")
        yield number, value


def _text_rows(lines):
    """(line, [the line without its terminator]) of every line: a blank line is an empty text, not skipped."""
    for number, line in lines:
        yield number, [line.removesuffix("\n").removesuffix("\r")]


@dataclass(frozen=True)
class Format:
    """How the reader takes one file format. ``rows`` turns the numbered lines of :func:`text_lines` into
    (first line, values) per row: a list, or a dict of column name -> value (its keys are then the columns);
    ``header_row``: whether the first row may name the columns (the caller says whether it does);
    ``columns``: the names of its columns where the format fixes them."""
    rows: Callable[[Iterator[tuple[int, str]]], Iterator[tuple[int, list | dict]]]
    header_row: bool = False
    columns: tuple[str, ...] | None = None


# Every format the reader knows, by extension: a new format is one entry here (with its rows function), and
# training, prediction and both pages' uploads take it.
FORMATS = {
    ".csv": Format(_delimited_rows, header_row=True),
    ".tsv": Format(partial(_delimited_rows, delimiter="\t", quoting=csv.QUOTE_NONE), header_row=True),
    ".jsonl": Format(_jsonl_rows),
    ".txt": Format(_text_rows, columns=("text",)),
}
# FORMAT_NAMES and TABLES (disan.data.choices) name these for the command line; tests/test_startup.py checks them


def format_of(name: str | os.PathLike, allowed: Collection[str] = FORMATS, given: str | None = None) -> str:
    """The format of a file called ``name``: ``given`` (an extension, with or without its dot) whatever the
    name's extension, else that extension; DataError when it is not one of ``allowed``."""
    suffix = f".{given.lstrip('.')}".lower() if given else Path(name).suffix.lower()
    if suffix not in allowed:
        raise DataError(f"{name}: unknown format {suffix or '(no extension)'!r}; use {', '.join(allowed)}")
    return suffix


def file_format(path: str | os.PathLike, allowed: Collection[str] = TABLES, given: str | None = None) -> str:
    """:func:`format_of` a file that must be there and not empty (DataError)."""
    suffix = format_of(path, allowed, given)
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise DataError(f"{path} is empty")
    return suffix


def needs_header(specs: Sequence[str | None]) -> bool:
    """Whether columns named by ``specs`` imply a header row: unless every given one is a 0-based index."""
    given = [s for s in specs if s is not None]
    return not (given and all(str(s).isdigit() for s in given))


@dataclass
class Rows:
    """A table being read: its column names and an iterator of (row, line, values) with one value per column."""
    columns: list[str]
    rows: Iterator[tuple[int, int, list]]
    header: bool                          # whether columns have names: a header row, JSONL keys, or .txt's "text"


def read_rows(path: str | os.PathLike, binary, suffix: str, header: bool) -> Rows:
    """The rows of an open binary stream in the format ``suffix`` (a key of :data:`FORMATS`), whose first row
    names the columns when ``header`` is true and the format has header rows; DataError (with the file and
    line) for text that is not UTF-8, a ragged row, a JSONL line that is not an object or array, a
    header-only or blank file. The first row is read at once, so that the columns are known."""
    name = str(path)
    form = FORMATS[suffix]
    rows = _with_path(name, form.rows(text_lines(binary)))
    try:
        first_line, first = next(rows)
    except StopIteration:
        raise DataError(f"{name} is empty") from None
    header_row = header and form.header_row
    if form.columns is not None:
        columns, header = list(form.columns), True
    elif isinstance(first, dict):  # a JSONL object is a row and its own header
        columns, header = list(first), True
    elif header_row:
        columns = [str(c) for c in first]
        if len(set(columns)) != len(columns):
            raise DataError(f"{name}: the header repeats a column name: {', '.join(columns)}")
    else:
        columns, header = [str(i) for i in range(len(first))], False
    width = "the header" if header_row else "the first row"
    body = _checked(name, columns, width, rows if header_row else itertools.chain([(first_line, first)], rows))
    try:
        peeked = next(body)
    except StopIteration:  # only a header row can be all there is
        raise DataError(f"{name} has a header but no rows") from None
    return Rows(columns, itertools.chain([peeked], body), header)


def _with_path(name: str, rows):
    """The rows, with the file's name put in front of a DataError's message."""
    try:
        yield from rows
    except DataError as e:
        raise DataError(f"{name}: {e}") from None


def _checked(name: str, columns: list[str], width: str, rows):
    """(row index, line, values in column order) of every row; DataError for a row of another width."""
    for index, (number, values) in enumerate(rows):
        if isinstance(values, dict):
            if list(values) != columns and set(values) != set(columns):
                raise DataError(f"{name}: line {number} has the keys {', '.join(values)}; "
                                f"the first row has {', '.join(columns)}")
            values = [values[c] for c in columns]
        elif len(values) != len(columns):
            raise DataError(f"{name}: line {number} has {len(values)} fields, {width} has {len(columns)} "
                            f"(ragged rows)")
        yield index, number, values


def named(columns: Sequence[str], names: Sequence[str]) -> str | None:
    """The column called by the first of ``names`` that one of ``columns`` bears (in any case, spaces around
    left out), or None."""
    lower = [str(c).strip().lower() for c in columns]
    return next((columns[lower.index(n)] for n in names if n in lower), None)


def column_index(path, spec: str | int, columns: list[str], header: bool) -> int:
    """The position of the column named ``spec`` (a header name, or a 0-based index in a file without one);
    DataError listing the columns there are."""
    if header and str(spec) in columns:
        return columns.index(str(spec))
    if not header and str(spec).isdigit() and int(spec) < len(columns):
        return int(spec)
    there = ", ".join(columns) if header else f"0 to {len(columns) - 1} (no header)"
    raise DataError(f"{path}: no column {spec!r}; its columns are {there}")


def cell_text(value) -> str:
    """A cell as text: strings as they are, JSON numbers and booleans as written, null as empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value)


def text_cell(name, line: int, column: str, value) -> str:
    """A cell that holds a sentence, as text (:func:`cell_text`); DataError naming the file, line and column
    where it holds a character that no sentence has (:func:`disan.data.text.check_characters`)."""
    text = cell_text(value)
    try:
        check_characters(text)
    except ValueError as e:
        raise DataError(f"{name}: line {line}, column {column!r}: {e}") from None
    return text


def preview(path: str | os.PathLike, header: bool = True, n: int = PREVIEW_ROWS) -> pd.DataFrame:
    """The first ``n`` rows of a table file, cells as text, under its column names: the header's, or for
    a CSV or TSV file read with ``header`` False the 0-based indices (as text), which name its columns then.
    DataError for a file that cannot be read; rows after the first ``n`` are not read."""
    path = Path(path)
    suffix = file_format(path)
    with open(path, "rb") as binary:
        table = read_rows(path, binary, suffix, header)
        rows = [[cell_text(v) for v in values] for _, _, values in itertools.islice(table.rows, n)]
    return pd.DataFrame(rows, columns=table.columns, dtype=object)


def guess_columns(table: pd.DataFrame) -> tuple[str, str]:
    """(text, label) columns of a :func:`preview`: the first named as in :data:`TEXT_COLUMNS` and
    :data:`LABEL_COLUMNS` (in any case); else, for the text, the column of the most words per row, and
    for the label, of the other columns the one with the fewest distinct values (ties: the last)."""
    columns = [str(c) for c in table.columns]
    words = {c: table[c].map(lambda v: len(str(v).split())).mean() if len(table) else 0.0 for c in columns}
    text = named(columns, TEXT_COLUMNS) or max(columns, key=lambda c: (words[c], -columns.index(c)))
    others = [c for c in columns if c != text] or columns
    label = named(columns, LABEL_COLUMNS) or min(reversed(others), key=lambda c: table[c].nunique())
    return text, label


# ---------------------------------------------------------------- labelled datasets

@dataclass
class FileTask(TaskData):
    """A dataset read from files: a :class:`TaskData` that also records where it came from
    (:func:`load_file_task` says what ``source`` holds)."""
    source: dict = field(default_factory=dict)

    def checksums(self) -> dict[str, str]:
        """{file name: SHA-256} of the files the splits were read from."""
        return {Path(f["path"]).name: f["sha256"] for f in self.source["files"].values()}


@dataclass
class Labelled:
    """The rows of one file: per row its index, line, text(s) and label as written."""
    path: Path
    rows: list[int]
    lines: list[int]
    texts: list          # str, or (text, text_b)
    labels: list[str]


def read_labelled(path: str | os.PathLike, text: str, label: str, text_b: str | None = None) -> Labelled:
    """Every row of a table: its text(s) and label, DataError for a bad file, a missing column, a text
    holding a character no sentence has (:func:`text_cell`) or an empty text or label (naming the line)."""
    path = Path(path)
    suffix = file_format(path)
    specs = [text, text_b, label]
    with open(path, "rb") as binary:
        table = read_rows(path, binary, suffix, needs_header(specs))
        at = [None if s is None else column_index(path, s, table.columns, table.header) for s in specs]
        out = Labelled(path, [], [], [], [])
        for index, line, values in table.rows:
            texts = [None if i is None else text_cell(path, line, s, values[i]).strip()
                     for s, i in zip(specs[:2], at[:2])]
            cells = [*texts, cell_text(values[at[2]]).strip()]
            for spec, cell in zip(specs, cells):
                if spec is not None and not cell:
                    what = "label" if spec is label else "text"
                    raise DataError(f"{path}: line {line}: the {what} in column {spec!r} is empty")
            out.rows.append(index)
            out.lines.append(line)
            out.texts.append(cells[0] if text_b is None else (cells[0], cells[1]))
            out.labels.append(cells[2])
    return out


def class_order(labels: Sequence[str]) -> list[str]:
    """The classes of a label column in the order the model numbers them: by value when every label
    is an integer, else alphabetically."""
    classes = set(labels)
    if all(_is_int(c) for c in classes):
        return sorted(classes, key=int)
    return sorted(classes)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def scores(data: Labelled) -> list[float]:
    """The labels of a relatedness file as scores, DataError naming the first line whose label is not a
    number from 1 up (the head predicts a distribution over the levels 1..K, as on SICK)."""
    out = []
    for line, label in zip(data.lines, data.labels):
        try:
            value = float(label)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise DataError(f"{data.path}: line {line}: the relatedness score {label!r} is not a number")
        if value < 1:
            raise DataError(f"{data.path}: line {line}: the relatedness score {label} is below 1; scores are "
                            f"read on a scale from 1 to K (rescale them, e.g. 1 + 4 x score for 0..1)")
        out.append(value)
    return out


def allocate(sizes: Sequence[int], total: int) -> list[int]:
    """``total`` split over groups in proportion to ``sizes`` (largest remainders first, ties to the first group)."""
    whole = sum(sizes)
    quotas = [s * total / whole for s in sizes]
    counts = [math.floor(q) for q in quotas]
    for i in sorted(range(len(sizes)), key=lambda i: (counts[i] - quotas[i], i))[: total - sum(counts)]:
        counts[i] += 1
    return counts


def stratified_split(strata: Sequence, fractions: dict[str, float], seed: int) -> dict[str, list[int]]:
    """Row indices of each held-out split (e.g. ``{"dev": 0.1, "test": 0.1}``) and of ``train``, the rest.

    Each split takes round(fraction x rows), at least one, shared among the strata (the classes) in
    proportion to their sizes; within a stratum the rows are drawn by a generator seeded with ``seed``,
    so that a split depends only on the labels, the fractions and the seed.
    """
    groups: dict = {}
    for row, key in enumerate(strata):
        groups.setdefault(key, []).append(row)
    keys = sorted(groups)
    rng = np.random.default_rng(seed)
    order = {k: [groups[k][i] for i in rng.permutation(len(groups[k]))] for k in keys}
    out, taken = {}, {k: 0 for k in keys}
    for name, fraction in fractions.items():
        want = max(1, round(fraction * len(strata)))
        counts = allocate([len(groups[k]) for k in keys], want)
        out[name] = sorted(r for k, c in zip(keys, counts) for r in order[k][taken[k]:taken[k] + c])
        for k, c in zip(keys, counts):
            taken[k] += c
    out["train"] = sorted(r for k in keys for r in order[k][taken[k]:])
    return out


def minimum_rows(fractions: dict[str, float]) -> int:
    """The fewest rows from which every split of ``fractions`` gets a row and training two."""
    n = 2
    while n - sum(max(1, round(f * n)) for f in fractions.values()) < 2:
        n += 1
    return n


def file_record(path: Path) -> dict:
    """Where a file is and its SHA-256: what a checkpoint records of each data file."""
    return {"path": str(path.resolve()), "sha256": sha256_file(path)}


def kinds_for(text_b_column: str | None) -> list[str]:
    """The kinds of model a file's text columns allow, the default first (:data:`disan.data.kinds.KINDS`
    order): classify for one text; pair, then relatedness, for two."""
    return kinds_taking(1 if text_b_column is None else 2)


def load_file_task(path: str | os.PathLike, text_column: str, label_column: str, text_b_column: str | None = None,
                   kind: str | None = None, dev: str | os.PathLike | None = None,
                   test: str | os.PathLike | None = None, dev_fraction: float = DEFAULT_FRACTION,
                   test_fraction: float = DEFAULT_FRACTION, seed: int = 0) -> FileTask:
    """A dataset from a table file (``--data``): train, dev and test splits, classes and a record of it all.

    ``kind`` is classify (the default), pair (the default with ``text_b_column``) or relatedness (numeric
    labels, read as scores from 1 to K). ``dev`` and ``test`` are files with the same columns; a split
    without one is drawn from the data file, stratified by class (by rounded score for relatedness), with
    ``dev_fraction`` / ``test_fraction`` of its rows, seeded by ``seed``.

    ``source`` records the files (path and SHA-256), the columns, kind, fractions and seed, and
    ``rows``: the 0-based row indices of the splits drawn from the data file (train is every other row),
    from which :func:`load_recorded` reads the same splits again. DataError for anything wrong.
    """
    path = Path(path)
    kind = kind or kinds_for(text_b_column)[0]
    if kind not in kinds_for(text_b_column):
        raise DataError(f"a {kind} model takes one text; a second text column is for {' and '.join(kinds_taking(2))}"
                        if kind in kinds_taking(1) else
                        f"a {kind} model takes two texts: give the second one's column (--text-b-column)")
    drawn = {name: f for name, f, given in (("dev", dev_fraction, dev), ("test", test_fraction, test)) if given is None}
    for name, f in drawn.items():
        if not 0 < f < 1:
            raise DataError(f"the {name} fraction must be between 0 and 1, not {f}")
    if sum(drawn.values()) >= 1:
        raise DataError("the dev and test fractions leave no rows for training")
    columns = (text_column, label_column, text_b_column)
    main = read_labelled(path, *columns)
    others = {name: read_labelled(p, *columns) for name, p in (("dev", dev), ("test", test)) if p is not None}

    if kind_of(kind).scored:
        values = {"data": scores(main), **{name: scores(d) for name, d in others.items()}}
        top = max(values["data"])
        if min(values["data"]) == top:
            raise DataError(f"{path}: every row has the score {main.labels[0]}: nothing to learn")
        labels = [str(level) for level in range(1, max(2, math.ceil(max(max(v) for v in values.values()))) + 1)]
        strata = [round(v) for v in values["data"]]
    else:
        labels = class_order(main.labels)
        if len(labels) < 2:
            raise DataError(f"{path}: every row has the label {labels[0]!r}; a classifier needs two classes or more")
        index = {c: i for i, c in enumerate(labels)}
        for name, d in others.items():
            for line, label in zip(d.lines, d.labels):
                if label not in index:
                    raise DataError(f"{d.path}: line {line}: the label {label!r} is not in the training data "
                                    f"(its labels are {', '.join(labels)})")
        values = {"data": [index[c] for c in main.labels],
                  **{name: [index[c] for c in d.labels] for name, d in others.items()}}
        strata = values["data"]

    if len(strata) < minimum_rows(drawn):
        held = "".join(f"a {f:.0%} {name} split, " for name, f in drawn.items())
        raise DataError(f"{path} has {len(strata)} rows: too few for {held}and training "
                        f"(at least {minimum_rows(drawn)} rows)")
    split = stratified_split(strata, drawn, seed)
    examples = {name: [Example(main.texts[r], values["data"][r]) for r in rows] for name, rows in split.items()}
    for name, d in others.items():
        examples[name] = [Example(t, v) for t, v in zip(d.texts, values[name])]

    files = {"data": file_record(path), **{name: file_record(d.path) for name, d in others.items()}}
    how = [f"{name} = {f:.0%} of {path.name} (stratified, seed {seed})" for name, f in drawn.items()]
    how += [f"{name} = {d.path.name}" for name, d in others.items()]
    source = {"files": files, "columns": {"text": text_column, "text_b": text_b_column, "label": label_column},
              "kind": kind, "seed": seed, "dev_fraction": dev_fraction, "test_fraction": test_fraction,
              "rows": {name: split[name] for name in drawn}}
    return FileTask(path.name, kind, labels, examples["train"], examples["dev"], examples["test"],
                    f"your own data: {'; '.join(how)}; train = the other rows of {path.name}.", source)


def load_recorded(source: dict) -> FileTask:
    """The dataset a checkpoint was trained on, from its record (``source`` of :func:`load_file_task`);
    DataError when a file is missing or no longer has the recorded SHA-256."""
    files = source["files"]
    for name, f in files.items():
        if not Path(f["path"]).is_file():
            raise DataError(f"the {name} file {f['path']} is not there any more")
        if sha256_file(Path(f["path"])) != f["sha256"]:
            raise DataError(f"{f['path']} has changed since the model was trained (its SHA-256 differs)")
    cols = source["columns"]
    task = load_file_task(files["data"]["path"], cols["text"], cols["label"], cols["text_b"], source["kind"],
                          files.get("dev", {}).get("path"), files.get("test", {}).get("path"),
                          source["dev_fraction"], source["test_fraction"], source["seed"])
    if task.source["rows"] != source["rows"]:  # the same file, labels and seed draw the same rows
        raise DataError("the recorded split rows differ from those drawn again; was the seed changed?")
    return task


@dataclass
class Summary:
    """What a file gives to train on, read as training will read it (:func:`summarize`)."""
    kind: str
    labels: list[str]            # the classes in the model's order, or the relatedness levels 1..K
    splits: dict[str, int]       # rows of train, dev and test
    counts: list[int]            # rows per class, in the order of ``labels`` (classify and pair; else empty)
    scores: list[float]          # every row's score (relatedness; else empty)

    @property
    def rows(self) -> int:
        return sum(self.splits.values())


def summarize(path: str | os.PathLike, text_column: str, label_column: str, text_b_column: str | None = None,
              kind: str | None = None, dev_fraction: float = DEFAULT_FRACTION,
              test_fraction: float = DEFAULT_FRACTION) -> Summary:
    """The label balance of a file over all its rows and the sizes of the splits that training on it with
    these columns and fractions draws; DataError, as :func:`load_file_task` raises it, for anything that
    would stop the training."""
    task = load_file_task(path, text_column, label_column, text_b_column, kind, dev_fraction=dev_fraction,
                          test_fraction=test_fraction)
    examples = task.train + task.dev + task.test
    splits = {"train": len(task.train), "dev": len(task.dev), "test": len(task.test)}
    if kind_of(task.kind).scored:
        return Summary(task.kind, task.labels, splits, [], [float(e.label) for e in examples])
    counts = np.bincount([int(e.label) for e in examples], minlength=len(task.labels))
    return Summary(task.kind, task.labels, splits, counts.tolist(), [])


def trained_task(config: dict, data_dir: str | os.PathLike | None = None,
                 splits: Sequence[str] = SPLITS) -> TaskData:
    """The data a checkpoint was trained on, from its config (``config.json``), whole sentences: the
    splits recorded of a file of one's own (:func:`load_recorded`; DataError when a file is gone or has
    changed), else its benchmark with the recorded fold and seed, of which only ``splits`` need be read
    (:func:`disan.data.registry.load_task`)."""
    if "data" in config:
        return load_recorded(config["data"])
    tc = config.get("train_config") or {}
    return load_task(config["task"], data_dir or tc.get("data_dir"), fold=tc.get("fold", 0),
                     seed=tc.get("seed", 0), phrases=False, splits=splits)
