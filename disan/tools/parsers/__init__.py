"""The argument parsers of the commands whose implementation imports torch, pandas or plotly at its top
(bench, latency, analysis-bench, predict, compare, results), each with what the implementation shares with
its line (the names and defaults the parser offers).

These modules import only light modules (the ``choices`` modules of the floors below), so that ``disan
COMMAND --help`` and a mistyped flag end before the implementation is imported: ``disan.__main__`` parses a
command's line with its parser here first, then runs the implementation's ``main``, which parses it again
with the same parser.
"""
