"""The results tables (docs/results.md, and the README's brief one), from the metrics.json of trained checkpoints.

The ``results`` command's arguments (the tables: :mod:`disan.tools.results`).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from disan.data.paths import REPO_ROOT, shipped_checkpoints


def parser() -> argparse.ArgumentParser:
    """The ``results`` command's arguments."""
    p = argparse.ArgumentParser(prog="python -m disan results", description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="*", type=Path, default=[shipped_checkpoints(), REPO_ROOT / "results"])
    return p
