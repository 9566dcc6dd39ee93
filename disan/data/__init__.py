"""Floor 1, data: benchmark loaders, files of one's own (tables, and uploads kept in the data folder),
tokenisation and vocabulary, word vectors, download, batching, and where the project's folders are.

Imports nothing else of ``disan``.
"""
