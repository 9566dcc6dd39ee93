"""Floor 1, data: benchmark loaders, tokenisation and vocabulary, word vectors, download, batching, and
where the project's folders are.

Imports nothing else of ``disan``.
"""
