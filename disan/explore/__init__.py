"""Floor 4, exploration: what the app draws (figures, tables, the shaded sentence, the page views), the
catalog of checkpoints, and the analyses across sentences, edits and models.

Reads models only through :mod:`disan.inspect`; never imports :mod:`disan.training` or Streamlit.
"""
