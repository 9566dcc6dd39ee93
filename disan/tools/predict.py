"""What ``disan predict`` runs (its arguments: :mod:`disan.tools.parsers.predict`).

    python -m disan predict checkpoints/sst5 reviews.csv --text-column review --out predicted.csv
    cat sentences.txt | python -m disan predict checkpoints/sst5 - > predicted.csv
    python -m disan predict checkpoints/sick pairs.jsonl --text-column a --text-b-column b --label-column score
    python -m disan predict checkpoints/trec gold.txt --format tsv --text-column 1 --label-column 0

INPUT is a file in one of the formats of :data:`disan.data.files.FORMATS` (.txt: one text per line), read
by the package's one table reader, or ``-`` for standard input. Its format is its extension's, or the one
--format names whatever the extension (standard input: one text per line by default). The output keeps the input's columns and adds
``prediction`` and ``p_<label>`` per class, or ``score`` for a relatedness model: CSV, TSV or JSONL by
the extension of --out, written to a temporary file beside it and renamed when complete (a failed run
leaves nothing); without --out, CSV on standard output. With --label-column the accuracy (Pearson r for
relatedness) is reported on standard error, and a label the model does not know is an error.

It streams: rows are read in chunks of :data:`~disan.data.files.CHUNK_ROWS`, tokenised, sorted by
length into batches (little padding), run in inference mode on the model's fast kernel, and written
in their input order, so that memory stays bounded whatever the file's length. A progress bar with
the sentences per second goes to standard error.

The usage line names the command as it was started: ``disan predict`` from the console script.
"""
from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from disan.data.files import (
    CHUNK_ROWS,
    FORMATS,
    DataError,
    Rows,
    cell_text,
    column_index,
    file_format,
    needs_header,
    read_rows,
    text_cell,
)
from disan.data.kinds import kind_of
from disan.data.text import tokenize
from disan.inspect.pipeline import Pipeline, load
from disan.tools.parsers.predict import BATCH, OUTPUTS, parser


def output_columns(pipe: Pipeline) -> list[str]:
    """The columns prediction adds: ``score`` for relatedness, else ``prediction`` and ``p_<label>`` per class."""
    return ["score"] if kind_of(pipe.kind).scored else ["prediction", *(f"p_{label}" for label in pipe.labels)]


def counted(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless ``n`` is 1: "1 sentence", "2,048 sentences"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


class Progress(tqdm):
    """A bar of unknown length counting ``noun`` s, with the count and rate in words that agree:
    "1 sentence [00:07, 7.08 s/sentence]", "640 sentences [00:02, 312.4 sentences/s]" (tqdm's own
    units would read "1 sentences" and "7.08s/ sentences")."""

    def __init__(self, noun: str, **kwargs):
        self.noun = noun  # before tqdm's __init__, which draws the bar
        super().__init__(bar_format="{counted} [{elapsed}, {speed}]", **kwargs)

    @property
    def format_dict(self) -> dict:
        shown = super().format_dict
        n, elapsed = shown["n"], shown["elapsed"]
        rate = shown["rate"] or (n / elapsed if elapsed else None)  # smoothed, else the mean so far
        shown["counted"] = counted(n, self.noun)
        shown["speed"] = (f"? {self.noun}s/s" if not rate else f"{rate:,.1f} {self.noun}s/s" if rate >= 1
                          else f"{1 / rate:.2f} s/{self.noun}")
        return shown


@dataclass
class Score:
    """The agreement of the predictions with a label column, accumulated row by row."""
    kind: str
    n: int = 0
    right: int = 0
    sums: np.ndarray = field(default_factory=lambda: np.zeros(5))   # x, y, xx, yy, xy for Pearson r

    def add(self, predicted, gold) -> None:
        self.n += 1
        if kind_of(self.kind).scored:
            self.sums += [predicted, gold, predicted * predicted, gold * gold, predicted * gold]
        else:
            self.right += predicted == gold

    def line(self) -> str:
        """The figure as one line: accuracy, or Pearson r for relatedness."""
        if not kind_of(self.kind).scored:
            return f"accuracy {self.right / self.n:.4f} ({self.right:,} of {self.n:,})"
        x, y, xx, yy, xy = self.sums / self.n
        r = (xy - x * y) / math.sqrt(max((xx - x * x) * (yy - y * y), 0.0) or math.nan)
        return f"pearson {r:.4f} on {self.n:,} pairs"


def predict_rows(pipe: Pipeline, name: str, table: Rows, text_at: list[int], label_at: int | None = None,
                 score: Score | None = None, batch_size: int = BATCH,
                 chunk_rows: int = CHUNK_ROWS) -> Iterator[tuple[list, list]]:
    """(the input row's values, the values of :func:`output_columns`) for every row, in input order.

    ``text_at`` holds the column positions of the text (one, or two for a pair model). Rows are taken
    ``chunk_rows`` at a time; within a chunk the inputs run in length-sorted batches. DataError names
    the line of an empty text or one holding a character no sentence has (a control character:
    :func:`disan.data.files.text_cell`), or of a label the model does not know (with ``label_at``, whose
    agreement with the predictions goes into ``score``).
    """
    chunk = []
    for row in table.rows:
        chunk.append(row)
        if len(chunk) == chunk_rows:
            yield from _predict_chunk(pipe, name, table.columns, chunk, text_at, label_at, score, batch_size)
            chunk = []
    if chunk:
        yield from _predict_chunk(pipe, name, table.columns, chunk, text_at, label_at, score, batch_size)


def _predict_chunk(pipe, name, columns, chunk, text_at, label_at, score, batch_size):
    tokens = [[] for _ in text_at]
    for _, line, values in chunk:
        for column, at in zip(tokens, text_at):
            words = tokenize(text_cell(name, line, columns[at], values[at]))
            if not words:
                raise DataError(f"{name}: line {line}: the text in column {columns[at]!r} is empty")
            column.append(words)
    logits = pipe.logits(tokens, batch_size)
    kind = kind_of(pipe.kind)
    if kind.scored:
        added = [[round(float(s), 4)] for s in kind.read(logits)]
    else:
        probs = logits.softmax(dim=-1).numpy()
        added = [[pipe.labels[int(p.argmax())], *(round(float(v), 6) for v in p)] for p in probs]
    for (_, line, values), out in zip(chunk, added):  # the whole chunk is checked before any row is written
        if label_at is not None:
            gold = cell_text(values[label_at]).strip()
            if kind.scored:
                try:
                    score.add(out[0], float(gold))
                except ValueError:
                    raise DataError(f"{name}: line {line}: the score {gold!r} is not a number") from None
            elif gold not in pipe.labels:
                raise DataError(f"{name}: line {line}: the label {gold!r} is not one the model knows "
                                f"({', '.join(pipe.labels)})")
            else:
                score.add(out[0], gold)
    for (_, _, values), out in zip(chunk, added):
        yield values, out


class Writer:
    """Rows out as CSV, TSV or JSONL (by the extension of the output's name) to a text stream."""

    def __init__(self, stream, suffix: str, columns: list[str]):
        self.stream, self.suffix, self.columns = stream, suffix, columns
        self.csv = None if suffix == ".jsonl" else csv.writer(stream, delimiter="\t" if suffix == ".tsv" else ",",
                                                              lineterminator="\n")
        self.started = False

    def write(self, values: list) -> None:
        """One row; the header goes first, with the first row (a run that fails before writes nothing)."""
        if self.csv and not self.started:
            self.csv.writerow(self.columns)
        self.started = True
        if self.suffix == ".jsonl":
            self.stream.write(json.dumps(dict(zip(self.columns, values)), ensure_ascii=False) + "\n")
        else:
            self.csv.writerow([v if isinstance(v, (str, float, int)) else cell_text(v) for v in values])


@contextmanager
def atomic_output(path: Path | None):
    """A text stream for the output: standard output, or a temporary file beside ``path`` that is
    renamed to it when the block ends without an error, and removed when it does not."""
    if path is None:
        yield sys.stdout
        sys.stdout.flush()
        return
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            yield f
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def format_hint(table: Rows, suffix: str) -> str:
    """What to say of a table read as one column in the format ``suffix`` that its name implied: the
    ``--format`` whose delimiter its first line holds (a TSV file named .txt), else to name the format."""
    first = next(table.rows, (0, 0, [""]))[2]
    line = (table.columns[0] if table.header else "") + cell_text(first[0])
    for option, delimiter, what in (("tsv", "\t", "tabs"), ("csv", ",", "commas")):
        if delimiter in line and suffix != f".{option}":
            return f"its first line has {what}: read it with --format {option}"
    return f"name its format with --format ({', '.join(f.lstrip('.') for f in FORMATS)})"


def predict_file(pipe: Pipeline, binary, name: str, suffix: str, out: Path | None, text_column: str | None = None,
                 text_b_column: str | None = None, label_column: str | None = None, batch_size: int = BATCH,
                 chunk_rows: int = CHUNK_ROWS, progress: bool = True,
                 read_as: str | None = None) -> tuple[int, float, Score | None]:
    """Predict every row of an open binary input (``name`` and format ``suffix``) into ``out`` (None:
    standard output); returns (rows, seconds, the score against ``label_column`` or None). ``read_as`` says
    how the format was chosen where ``--format`` did not name it ("by its extension"): a column missing from
    a file read as one column then names ``--format`` (:func:`format_hint`)."""
    if pipe.is_pair and text_b_column is None:
        raise DataError("this is a sentence-pair model: give the second text's column (--text-b-column)")
    if not pipe.is_pair and text_b_column is not None:
        raise DataError("this model takes one text; --text-b-column is for pair and relatedness models")
    out_suffix = ".csv" if out is None else out.suffix.lower()
    if out_suffix not in OUTPUTS:
        raise DataError(f"{out}: unknown output format {out_suffix or '(no extension)'!r}; use {', '.join(OUTPUTS)}")
    specs = [text_column, text_b_column, label_column]
    table = read_rows(name, binary, suffix, needs_header(specs))
    text_column = specs[0] or ("text" if table.header else "0")
    try:
        at = [column_index(name, s, table.columns, table.header) if s is not None else None
              for s in (text_column, text_b_column, label_column)]
    except DataError as e:
        if read_as is None or len(table.columns) > 1:  # a format named, or one that found the columns
            raise
        raise DataError(f"{e} (read as {suffix.lstrip('.')}, {read_as}; {format_hint(table, suffix)})") from None
    added = output_columns(pipe)
    clash = [c for c in added if c in table.columns]
    if clash:
        raise DataError(f"{name} already has a column {clash[0]!r}, which the predictions would replace")
    score = Score(pipe.kind) if label_column is not None else None
    started, n = time.perf_counter(), 0
    bar = Progress("pair" if pipe.is_pair else "sentence", file=sys.stderr, disable=not progress, mininterval=0.5)
    with atomic_output(out) as stream:
        writer = Writer(stream, out_suffix, table.columns + added)
        for values, extra in predict_rows(pipe, name, table, [i for i in at[:2] if i is not None], at[2], score,
                                          batch_size, chunk_rows):
            writer.write(list(values) + extra)
            n += 1
            bar.update(1)
    bar.close()
    return n, time.perf_counter() - started, score


def main(argv: Iterable[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    pipe = load(args.checkpoint, device=args.device)
    if args.input == "-":
        name, suffix, source = "<stdin>", f".{args.format or 'txt'}", nullcontext(sys.stdin.buffer)
        read_as = "the default for standard input"
    else:
        name, read_as = args.input, "by its extension"
        try:
            suffix = file_format(name, FORMATS, args.format)
        except DataError as e:
            if args.format or Path(name).suffix.lower() in FORMATS:
                raise
            raise DataError(f"{e}, or name its format with --format (e.g. --format tsv)") from None
        source = open(name, "rb")
    with source as binary:
        n, seconds, score = predict_file(pipe, binary, name, suffix, args.out, args.text_column, args.text_b_column,
                                         args.label_column, args.batch_size, progress=args.progress,
                                         read_as=None if args.format else read_as)
    where = f" into {args.out}" if args.out else ""
    print(f"{counted(n, 'input')}{where} in {seconds:.1f} s ({n / max(seconds, 1e-9):,.0f}/s)"
          + (f"; {score.line()}" if score else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
