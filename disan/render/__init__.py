"""Floor 4, rendering: what a person looks at, drawn from traces and analyses' results read as numpy: figures,
the page views, charts, tables, the shaded sentence's markup, screen labels and hover text, notebook display
and the standalone HTML report.

Never imports torch itself, nor :mod:`disan.analyses` or :mod:`disan.store` (tests/test_layers.py): it reads
results by their fields.
"""
