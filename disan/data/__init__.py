"""Floor 1, data: benchmark loaders, tokenisation and vocabulary, word vectors, download, batching.

Imports nothing else of ``disan``.
"""
