"""Floor 2, the model: masks, attention (the dense reference) and its faster kernels, DiSA and
DiSAN, the Table 1 baselines, task heads and checkpoints, the device a model runs on.

Imports only :mod:`disan.data`: the vocabulary a checkpoint carries, and the word vectors it was trained
with (to grow a loaded model to their whole vocabulary).
"""
