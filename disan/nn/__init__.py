"""Floor 2, the model: masks, attention (the dense reference) and its faster kernels, DiSA and
DiSAN, the Table 1 baselines, task heads and checkpoints.

Imports only :mod:`disan.data` (the vocabulary a checkpoint carries).
"""
