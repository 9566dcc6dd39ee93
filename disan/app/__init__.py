"""Floor 4, the Streamlit app's own helpers: cached models and traces, the current input, drawing
figures and downloads. Only ``app.py`` and ``pages/`` import this package.
"""
