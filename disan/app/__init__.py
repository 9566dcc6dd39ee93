"""Floor 5, the Streamlit app's glue: cached models and traces (the server's trace cache), the sidebar's
checkpoints and input, shareable links and opening an input in the Attention page, drawing views and
downloads, the analysis pages' cached computations, and the Training page's jobs, files and form (its
fields assembled into a TrainConfig) and what it says about a run.

``app.py`` and ``app_pages/`` import this package, :mod:`disan.explore` and :mod:`disan.inspect` only
(tests/test_layers.py): what they need of the floors below is read here. Besides them, the latency tool
reads the trace cache's memory bound (:mod:`disan.store.memory`).
"""
