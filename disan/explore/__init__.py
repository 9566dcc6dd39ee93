"""Floor 4, exploration: what the app draws (figures, tables, the shaded sentence, the page views), the
catalog of checkpoints, the feature atlas, and the analyses across sentences, edits and models.

Traces models through :mod:`disan.inspect`. Two modules read :mod:`disan.nn` themselves: the catalog
checks checkpoint files without loading them (:mod:`disan.nn.checkpoint`) and names each kind's headline
metric, and attribution differentiates the model's encoder and head on word vectors, taking a relatedness
head's score from :mod:`disan.nn.heads`. Never imports :mod:`disan.training` or Streamlit.
"""
