"""A standalone HTML report of one sentence:

    python -m disan report CHECKPOINT "text" [--hypothesis "..."] --out report.html

The prediction, the forward and backward attention, the fusion gates, source2token and the attribution
(:mod:`disan.render.report`), with plotly.js embedded so that the file opens offline.
A checkpoint that cannot be loaded or a text that cannot be traced ends with a one-line error and exit 1.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from disan.data.paths import CHECKPOINT_HELP
from disan.analyses.choices import STEPS


def parser() -> argparse.ArgumentParser:
    """The ``report`` command's arguments."""
    parser = argparse.ArgumentParser(prog="python -m disan report", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help=CHECKPOINT_HELP)
    parser.add_argument("text", help="the sentence (the premise, for a sentence-pair model)")
    parser.add_argument("--hypothesis", default=None, help="the hypothesis, for a sentence-pair model")
    parser.add_argument("--out", default="report.html", help="the HTML file to write (default: report.html)")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"integrated-gradients steps (default: {STEPS})")
    return parser


def main(argv=None) -> int:
    """Write the report; returns the exit status (1, with one line on stderr, for a bad checkpoint or text)."""
    p = parser()
    args = p.parse_args(argv)
    # imported here, not at the top: ``disan report --help`` imports this module and needs no torch or plotly
    from disan.analyses.attribution import attributed
    from disan.inspect.pipeline import load
    from disan.render.report import report_file, report_input
    try:
        pipe = load(args.checkpoint)
        result = pipe.trace(report_input(pipe, args.text, args.hypothesis))
        Path(args.out).write_bytes(report_file(pipe, result, attributed(pipe, result.sentences, args.steps)))
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
