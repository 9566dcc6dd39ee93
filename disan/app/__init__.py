"""Floor 5, the Streamlit app's own helpers: cached models and traces (the server's trace cache), the
current input and its shareable link, drawing views and downloads, the training progress the pages show.
Only ``app.py`` and ``app_pages/`` import this package.
"""
