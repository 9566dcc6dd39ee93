"""Floor 6, tools: the commands besides training and evaluation: benchmarks (a training step, the app's
latency, the analyses), parameter counts, the results table, a sentence's HTML report, batch prediction,
paired comparison of checkpoints, and starting the app; and the app in a real browser
(:mod:`~disan.tools.browser`), which the latency command and the browser tests drive. They may use every
floor below.

Run as ``python -m disan {bench,latency,analysis-bench,params,results,report,predict,compare,app}``, or
``disan COMMAND`` from the console script.
"""
import sys
from pathlib import Path


def invoked() -> str:
    """How the command line was started, for usage lines: ``disan`` from the console script
    (pyproject.toml's [project.scripts]; ``disan.exe`` on Windows), else ``python -m disan``."""
    return "disan" if Path(sys.argv[0]).stem == "disan" else "python -m disan"
