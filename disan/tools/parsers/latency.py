"""App latency and memory.

The ``latency`` command's arguments, and the shipped checkpoints :mod:`disan.tools.latency` opens the
analysis pages with.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from disan.store.memory import CACHE_ENV

ANALYSIS_MODELS = ("sst5", "sick-e")


def parser() -> argparse.ArgumentParser:
    """The ``latency`` command's arguments."""
    parser = argparse.ArgumentParser(prog="python -m disan latency", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", nargs="?", default=None,
                        help="default: the app's first model (sst5 among the shipped checkpoints)")
    parser.add_argument("--tokens", type=int, default=None, help="sentence length (default: 30; --browser: 200)")
    parser.add_argument("--repeats", type=int, default=None, help="default: 20; --browser: 3 rounds")
    parser.add_argument("--browser", action="store_true", help="time the running app in Chromium")
    parser.add_argument("--sentences", type=int, default=0, help="--browser: then type this many sentences and "
                                                                  "report the server's memory")
    parser.add_argument("--cache-mb", type=float, default=None, help=f"--browser: the trace cache's bound "
                                                                      f"({CACHE_ENV}; default 1024)")
    parser.add_argument("--open", type=int, nargs="?", const=3, metavar="SESSIONS",
                        help="time the first page of SESSIONS new browser sessions (default 3)")
    parser.add_argument("--predict", action="store_true", help="time a checkout's first prediction of the "
                                                               "SST-5 dev and test sentences")
    parser.add_argument("--installed", metavar="PYTHON",
                        help="--predict: also time the package this interpreter has installed (pip install .)")
    parser.add_argument("--draw", action="store_true", help="time plotly's drawing of each figure of the pages in "
                                                            "Chromium")
    parser.add_argument("--baseline", type=Path,
                        help="--browser, --open, --predict, --pages: another checkout to run side by side")
    parser.add_argument("--pages", choices=["analyses"], help="--browser: time the first visit of each analysis "
                                                               "page instead, on a fresh server and after a restart")
    parser.add_argument("--models", default=",".join(ANALYSIS_MODELS),
                        help="--pages analyses: the shipped checkpoints to open them with, comma-separated")
    parser.add_argument("--soak", type=float, nargs="?", const=10, metavar="MINUTES",
                        help="sessions visiting random pages, models and sentences for MINUTES (default 10): "
                             "exceptions, the server's memory, the result cache on disk")
    parser.add_argument("--sessions", type=int, default=3, help="--soak: browser sessions at once (default 3)")
    parser.add_argument("--disk-mb", type=float, default=32, help="--soak: the result cache's bound in megabytes "
                                                                  "(DISAN_CACHE_MB; default 32)")
    parser.add_argument("--trace", action="store_true",
                        help="--pages analyses: also when each page's script run started and ended, and the "
                             "server's CPU seconds per visit")
    return parser
