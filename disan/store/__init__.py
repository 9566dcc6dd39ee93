"""Floor 3, storage: the on-disk result cache (:mod:`~disan.store.diskcache`: the folder, its bound and
its entries), the keys it stores results under (:mod:`~disan.store.keys`: digests of the checkpoint, the
code and the settings), how a result is written to an entry (:mod:`~disan.store.codec`), and the
byte-bounded memory cache (:mod:`~disan.store.memory`). It stores results, never figures.

Imports :mod:`disan.data` and :mod:`disan.nn` (a checkpoint's files name its results) only; never plotly,
Streamlit, torch or :mod:`disan.render` (tests/test_layers.py).
"""
