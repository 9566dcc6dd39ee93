"""Floor 4, training: the training loop and its configuration, evaluation, metrics, training in
several processes under torchrun, TensorBoard event files, the probe sentence's attention after each
epoch, and the registry of background training jobs.

Imports :mod:`disan.data` and :mod:`disan.nn`, and :mod:`disan.inspect` for the probe (traced by
:func:`disan.inspect.pipeline.trace_ids`, as the app traces); never :mod:`disan.analyses` or :mod:`disan.render`.
"""
