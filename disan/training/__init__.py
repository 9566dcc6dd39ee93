"""Floor 3, training: the training loop and its configuration, evaluation, metrics, training in
several processes under torchrun, TensorBoard event files, and the registry of background training jobs.

Imports :mod:`disan.data` and :mod:`disan.nn`; never :mod:`disan.explore`.
"""
