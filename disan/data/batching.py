"""Token-id batches: the one padding helper shared by training, evaluation and the pipeline."""
from __future__ import annotations

import torch

from disan.data.text import PAD_ID


def pad(seqs: list[list[int]]) -> torch.Tensor:
    """Id lists -> (B, n) long tensor with the padding id after each sequence."""
    out = torch.full((len(seqs), max(len(s) for s in seqs)), PAD_ID, dtype=torch.long)
    for b, s in enumerate(seqs):
        out[b, : len(s)] = torch.tensor(s)
    return out
