"""Batch prediction: ``python -m disan predict CHECKPOINT INPUT [--out PATH]``.

The ``predict`` command's arguments, and the batch size and output formats :mod:`disan.tools.predict` uses.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from disan.data.choices import FORMAT_NAMES
from disan.data.paths import CHECKPOINT_HELP
from disan.tools import invoked

# sentences per batch, sorted by length so that padding stays small; at SST's lengths 64 runs faster on
# one CPU thread than 128 or 256 (the batch's activations stay in cache: `python -m disan bench --predict`)
BATCH = 64
OUTPUTS = (".csv", ".tsv", ".jsonl")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{invoked()} predict", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help=CHECKPOINT_HELP)
    p.add_argument("input", help=f"a {', '.join(FORMAT_NAMES)} file, or - for standard input")
    p.add_argument("--text-column", help="the texts' column: a header name, or a 0-based index for a file without "
                                         "a header row (default: 'text', or column 0 of a file without a header)")
    p.add_argument("--text-b-column", help="the second texts' column (pair and relatedness models)")
    p.add_argument("--label-column", help="gold labels (or scores): report the accuracy (or Pearson r)")
    p.add_argument("--out", type=Path, help=f"output file, {', '.join(OUTPUTS)} by its extension "
                                            "(default: CSV on standard output)")
    p.add_argument("--format", choices=[f.lstrip(".") for f in FORMAT_NAMES],
                   help="the input's format, whatever its extension (default: the extension's; for standard "
                        "input txt, one text per line)")
    p.add_argument("--batch-size", type=int, default=BATCH, help=f"sentences per batch (default: {BATCH})")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--device", default="cpu", help="auto, cpu, cuda or cuda:N (default: cpu)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    return p
