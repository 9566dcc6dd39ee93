"""Floor 3, inspection: what a trained model computes, read without drawing it.

* :mod:`~disan.inspect.pipeline`: ``disan.load(path)`` -> a pipeline that predicts and traces raw text;
  :func:`~disan.inspect.pipeline.trace_ids`, the one way a sentence is traced (the app, the analyses and
  training's probe all go through it);
* :mod:`~disan.inspect.batched`: the model over many sentences (length-bucketed batched traces, per-token
  vectors from the fast path);
* :mod:`~disan.inspect.senses`: a word's attention vectors in its contexts;
* :mod:`~disan.inspect.measures`: every attention measure the pages and analyses quote, each defined once;
* :mod:`~disan.inspect.catalog`: the checkpoints there are, each checked without loading it.

Imports :mod:`disan.data` and :mod:`disan.nn` only; :mod:`disan.analyses`, :mod:`disan.render` and :mod:`disan.training`
build on it.
"""
