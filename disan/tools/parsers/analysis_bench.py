"""Speed of the analysis pages' computations, once the model is loaded and the corpus read:

The ``analysis-bench`` command's arguments, and the analyses :mod:`disan.tools.analysis_bench` times.
"""
from __future__ import annotations

import argparse

from disan.analyses.choices import CASCADE_SENTENCES, SAMPLE_SENTENCES

ANALYSES = ("senses", "case", "atlas", "faithfulness", "startup")


def parser() -> argparse.ArgumentParser:
    """The ``analysis-bench`` command's arguments."""
    parser = argparse.ArgumentParser(prog="python -m disan analysis-bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=None,
                        help="default: the app's first model (sst5 among the shipped checkpoints)")
    parser.add_argument("--task", help="the benchmark whose sentences are the corpora (default: the checkpoint's)")
    parser.add_argument("--word", default="film")
    parser.add_argument("--occurrences", type=int, default=1000)
    parser.add_argument("--sentences", type=int, default=SAMPLE_SENTENCES)
    parser.add_argument("--faith-sentences", type=int, default=500)
    parser.add_argument("--cascade-sentences", type=int, default=CASCADE_SENTENCES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=ANALYSES, help="time this analysis only")
    return parser
