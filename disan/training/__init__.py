"""Floor 3, training: the training loop and its configuration, evaluation, metrics, and the
registry of background training jobs.

Imports :mod:`disan.data` and :mod:`disan.nn`; never :mod:`disan.explore`.
"""
