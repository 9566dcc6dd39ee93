"""Floor 3, exploration: the inference pipeline (``disan.load``), the catalog of checkpoints, and
what the app draws (figures, tables, word senses, the page views).

Imports :mod:`disan.data` and :mod:`disan.nn`; never :mod:`disan.training`.
"""
