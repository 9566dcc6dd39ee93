"""Paired comparison of checkpoints on one split: ``python -m disan compare BASE OTHER [OTHER ...]``.

The ``compare`` command's arguments (what it computes: :mod:`disan.tools.compare`).
"""
from __future__ import annotations

import argparse

from disan.data.choices import SPLITS
from disan.data.paths import CHECKPOINT_HELP
from disan.analyses.choices import RESAMPLES


def parser() -> argparse.ArgumentParser:
    """The ``compare`` command's arguments."""
    parser = argparse.ArgumentParser(prog="python -m disan compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help=f"the checkpoint the others are compared with: {CHECKPOINT_HELP}")
    parser.add_argument("others", nargs="+", metavar="other")
    parser.add_argument("--split", default="dev", choices=SPLITS, help="(default: dev, where choices are made)")
    parser.add_argument("--data-dir", dest="data_dir", default=None)
    parser.add_argument("--resamples", type=int, default=RESAMPLES)
    parser.add_argument("--json", action="store_true", help="one JSON object per comparison instead of a table")
    return parser
