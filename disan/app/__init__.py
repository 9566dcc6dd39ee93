"""Floor 5, the Streamlit app's glue, a module per job:

* :mod:`~disan.app.models`: the app's torch threads, the checkpoints listed, one pipeline per checkpoint, the
  sidebar's choice;
* :mod:`~disan.app.traces`: the server's one trace per (model, sentence), the sidebar's input, opening an input on
  the Attention page;
* :mod:`~disan.app.opening`: how a page that reads the sidebar's input opens (the prediction above it), a page of
  one registered view, the input's standalone report;
* :mod:`~disan.app.drawing`: drawing a view's rows, tables' column widths, a trace's downloads;
* :mod:`~disan.app.widgets`: widget state across pages and reruns, settings, the token window, uploads, and
  the URL that carries the settings a page draws;
* :mod:`~disan.app.runner`: the one runner of every analysis (stages, progress, results kept);
* :mod:`~disan.app.analyses`: the analysis pages' corpora and what a checkpoint offers them;
* :mod:`~disan.app.links`: shareable links (the model, its input, its digest and the pages' settings, checked
  against the widgets' bounds); :mod:`~disan.app.progress`: what the Training and Models pages say
  about a run; :mod:`~disan.app.training`: the Training page's jobs, files and form;
  :mod:`~disan.app.early`: a session's first run asks the browser for plotly's code before the imports.

``app.py`` and ``app_pages/`` import this package, :mod:`disan.analyses`, :mod:`disan.render` and
:mod:`disan.inspect` only (tests/test_layers.py): what they need of the floors below is read here. Besides them,
the latency tool reads the trace cache's memory bound (:mod:`disan.store.memory`).
"""
