"""Floor 4, rendering: what a person looks at, drawn from traces and analyses' results read as numpy: figures,
the page views, charts, tables, the shaded sentence's markup, screen labels and hover text, notebook display
and the standalone HTML report. An analysis of :mod:`disan.analyses` is drawn by the module of its name here
(:mod:`~disan.render.atlas`, :mod:`~disan.render.casestudy`, :mod:`~disan.render.compare`,
:mod:`~disan.render.corpus`, :mod:`~disan.render.counterfactual`).

Never imports torch itself, nor :mod:`disan.analyses` or :mod:`disan.store` (tests/test_layers.py): it reads
results by their fields.
"""
