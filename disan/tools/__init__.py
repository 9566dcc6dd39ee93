"""Floor 6, tools: the commands (predict, app, compare, report, ...) and benchmarks (training step, app latency),
parameter counts and the results table.

Run as ``python -m disan COMMAND``, or ``disan COMMAND`` from the console script.
"""
import sys
from pathlib import Path


def invoked() -> str:
    """How the command line was started, for usage lines: ``disan`` from the console script
    (pyproject.toml's [project.scripts]; ``disan.exe`` on Windows), else ``python -m disan``."""
    return "disan" if Path(sys.argv[0]).stem == "disan" else "python -m disan"
