"""Floor 3, storage: the on-disk result cache (:mod:`~disan.store.diskcache`: its keys apart from its codec)
and the byte-bounded memory cache (:mod:`~disan.store.memory`). It stores results, never figures.

Imports :mod:`disan.data` and :mod:`disan.nn` (a checkpoint's files name its results) only.
"""
