"""The probe sentence's attention after an epoch: what the Training page's timeline and the
TensorBoard images show of a model while it trains."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from disan.data.batching import pad
from disan.data.text import Vocab, check_text
from disan.inspect.pipeline import trace_ids
from disan.nn.device import device_of
from disan.nn.heads import TextModel

PROBE = "The glass bottle is big"


@dataclass
class Snapshot:
    """The probe sentence's attention in each DiSA block (mean over features) after an epoch."""
    epoch: int
    tokens: list[str]
    names: tuple[str, ...]             # the blocks' names, in order: ("forward", "backward"), ("diag 1", "diag 2")
    attention: tuple[np.ndarray, ...]  # (n, n) [j, i] per block
    masks: tuple[np.ndarray, ...]      # (n, n) bool [j, i] per block: the cells the block could attend


def snapshot(model: TextModel, vocab: Vocab, probe: str, epoch: int) -> Snapshot | None:
    """Trace the probe sentence with the model as it is now (on the model's device, in eval mode, as
    :func:`disan.inspect.pipeline.trace_ids` does for the app); None when the probe cannot be traced
    (too long, no words) or the encoder has no DiSA blocks to show."""
    try:
        tokens = check_text(probe)
    except ValueError:
        return None
    blocks = trace_ids(model, pad([vocab.encode(tokens)]).to(device_of(model)))[0].blocks
    if not blocks:
        return None
    return Snapshot(epoch, tokens, tuple(b.name for b in blocks), tuple(b.probs.mean(-1).numpy() for b in blocks),
                    tuple(b.mask.numpy() for b in blocks))
