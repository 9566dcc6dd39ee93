"""A model over many sentences at once: length-bucketed batches, batched traces, and per-token vectors
taken from the fast path.

The batches hold sentences of similar length (little padding) and at most ``budget`` query-key cells
(B x n x n), so that a dense trace, whose probabilities take B n^2 d_h floats per block, stays small
whatever the lengths.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from disan.explore.pipeline import _on_cpu
from disan.explore.senses import VECTORS
from disan.nn.attention import source2token_probs
from disan.nn.model import EncoderTrace, Source2Token

BUDGET = 64 * 24 * 24  # query-key cells per batch: 64 sentences of 24 tokens


def length_batches(lengths: Sequence[int], max_batch: int = 64, budget: int = BUDGET) -> list[list[int]]:
    """Indices of the sentences, shortest first, in batches of at most ``max_batch`` sentences and
    ``budget`` cells (a sentence longer than the budget allows gets a batch of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out, current = [], []
    for i in order:
        n = max(int(lengths[i]), 1)
        if current and (len(current) == max_batch or (len(current) + 1) * n * n > budget):
            out.append(current)
            current = []
        current.append(i)
    if current:
        out.append(current)
    return out


@torch.no_grad()
def traces(pipe, token_lists: Sequence[Sequence[str]],
           budget: int = BUDGET) -> Iterator[tuple[list[int], EncoderTrace]]:
    """(sentence indices, their batched :class:`EncoderTrace` on the CPU) for every batch; the traces
    keep the batch axis and padding, with ``lengths`` telling each sentence's length."""
    for idx in length_batches([len(t) for t in token_lists], budget=budget):
        _, tr = pipe.model.encode(pipe.ids([token_lists[i] for i in idx]), trace=True)
        yield idx, _on_cpu(tr)


def _modules(encoder, kind: str) -> tuple[list[torch.nn.Module], bool]:
    """The modules whose input (pre-hook: True) or output holds the per-token vectors of ``kind``."""
    blocks = list(getattr(encoder, "blocks", []))
    if kind == "source2token" and isinstance(getattr(encoder, "s2t", None), Source2Token):
        return [encoder.s2t.fc2], False      # the logits f(x_i); softmax over tokens gives P[i, :]
    if kind == "output" and blocks:
        return blocks, False                 # each DiSA block returns (u, trace)
    if kind == "s" and blocks:
        return [b.fuse_s for b in blocks], True  # the fusion gate's W_f1 s takes the attention output s
    raise ValueError(f"this encoder has no {kind!r} vectors")


def vector_kinds(encoder) -> list[str]:
    """The keys of :data:`disan.explore.senses.VECTORS` that :func:`token_vectors` can take from this encoder."""
    kinds = []
    for kind in VECTORS:
        try:
            _modules(encoder, kind)
        except ValueError:
            continue
        kinds.append(kind)
    return kinds


@torch.no_grad()
def token_vectors(pipe, token_lists: Sequence[Sequence[str]], places: Sequence[tuple[int, int]],
                  kind: str) -> np.ndarray:
    """(N, D) vectors of the tokens at ``places`` ((sentence, position) pairs) on the fast path.

    ``kind`` is a key of :data:`disan.explore.senses.VECTORS`: ``source2token`` (the token's row of the
    source2token probabilities), ``output`` (its DiSA outputs [u_fw; u_bw]) or ``s`` (the attention
    outputs [s_fw; s_bw]). The model runs without a trace, so no n^2 tensor is kept; forward hooks take
    the vectors from inside the encoder and are removed afterwards.
    """
    modules, before = _modules(pipe.model.encoder, kind)
    caught: list[torch.Tensor | None] = [None] * len(modules)

    def keep(k):
        def hook(module, args, output=None):
            caught[k] = args[0] if before else (output[0] if isinstance(output, tuple) else output)
        return hook

    handles = [m.register_forward_pre_hook(keep(k)) if before else m.register_forward_hook(keep(k))
               for k, m in enumerate(modules)]
    wanted: dict[int, list[int]] = {}
    for row, (sentence, _) in enumerate(places):
        wanted.setdefault(sentence, []).append(row)
    sentences = sorted(wanted)
    out = None
    try:
        for batch in length_batches([len(token_lists[s]) for s in sentences]):
            chosen = [sentences[b] for b in batch]
            ids = pipe.ids([token_lists[s] for s in chosen])
            pipe.model.encode(ids)
            vectors = (source2token_probs(caught[0], ids != 0) if kind == "source2token"
                       else torch.cat(caught, dim=-1)).cpu().numpy()  # (B, n, D)
            if out is None:
                out = np.zeros((len(places), vectors.shape[-1]), dtype=np.float32)
            for b, sentence in enumerate(chosen):
                for row in wanted[sentence]:
                    out[row] = vectors[b, places[row][1]]
    finally:
        for handle in handles:
            handle.remove()
    return np.zeros((0, 0), dtype=np.float32) if out is None else out
