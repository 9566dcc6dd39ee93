"""The portable token2token path: plain PyTorch, chunked over queries.

For every chunk of queries only the span of keys that any of them may attend is computed (for
the directional masks this skips the masked half of the plane), and the backward pass recomputes
tanh and exp chunk by chunk, so nothing of size n^2 d outlives a chunk. It runs on any device
and dtype, but each op makes a pass over a (B, chunk, keys, d) block in memory.

The logits c tanh(y) lie in [-c, c]. While 2 c <= |log(tiny)| / 2 (the bound of the C++
kernel: c <= 21.8 in float32) exp(c tanh(y)) and its sum neither overflow nor underflow and are
used as they are; beyond it the block is shifted by its largest valid logit per query and
feature. A chunk spans all valid keys of its queries, so that is the softmax's own max shift.
"""
from __future__ import annotations

import math

import torch

# Elements of one (B, chunk, keys, d) block; about 32 MB in float32 keeps the working set small
# while amortising the per-op overhead.
BLOCK_ELEMENTS = 8_000_000


def _spans(mask: torch.Tensor, values: torch.Tensor):
    """Yield (j0, j1, i0, i1) query chunks with the key span their queries may attend."""
    B, n, _ = mask.shape
    d = values.shape[-1]
    rows = max(1, BLOCK_ELEMENTS // max(1, B * n * d))
    any_row = mask.any(dim=0)  # (n, n): some sentence lets query j attend key i
    for j0 in range(0, n, rows):
        j1 = min(n, j0 + rows)
        cols = any_row[j0:j1].any(dim=0).nonzero()
        if cols.numel() == 0:
            continue
        yield j0, j1, int(cols[0]), int(cols[-1]) + 1


def _needs_shift(c: float, dtype: torch.dtype) -> bool:
    """Whether exp(c tanh(y)) needs the max shift in ``dtype`` (the C++ kernel's bound, see the module docstring)."""
    return 2 * c > -math.log(torch.finfo(dtype).tiny) / 2


def _block(key, query, mask, j0, j1, i0, i1, c):
    """Recompute t (B, cq, ck, d) and the masked exponentials E of one block (shifted for large c)."""
    t = torch.tanh((key[:, None, i0:i1] + query[:, j0:j1, None]) * (1.0 / c))
    m = mask[:, j0:j1, i0:i1, None]
    if not _needs_shift(c, t.dtype):
        return t, torch.exp(t * c) * m
    logits = (t * c).masked_fill(~m, -math.inf)  # exp gives 0 there, where exp(large) * 0 would be NaN
    peak = logits.amax(dim=2, keepdim=True)
    return t, torch.exp(logits - torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak)))


def _exponentials(key, query, mask, j0, j1, i0, i1, c):
    """The masked exponentials E (B, cq, ck, d) of one block, as ``_block`` gives them, where the forward
    pass needs no t: computed in place in one buffer, which halves the passes over memory of the eager
    forward (the path that serves while a checkout builds the C++ kernel)."""
    if _needs_shift(c, key.dtype):
        return _block(key, query, mask, j0, j1, i0, i1, c)[1]
    e = key[:, None, i0:i1] + query[:, j0:j1, None]
    return e.mul_(1.0 / c).tanh_().mul_(c).exp_().mul_(mask[:, j0:j1, i0:i1, None])


class _EagerToken2Token(torch.autograd.Function):
    @staticmethod
    def forward(ctx, key, query, values, mask, c):
        s = torch.zeros_like(values)
        for j0, j1, i0, i1 in _spans(mask, values):
            e = _exponentials(key, query, mask, j0, j1, i0, i1, c)
            z = e.sum(dim=2)  # (B, cq, d); 0 only where a query has no valid key
            num = e.mul_(values[:, None, i0:i1]).sum(dim=2)  # (B, cq, d): sum_i E[j, i] * values_i
            s[:, j0:j1] = num / z.clamp_min(torch.finfo(z.dtype).tiny)
        ctx.save_for_backward(key, query, values, mask, s)
        ctx.c = c
        return s

    @staticmethod
    def backward(ctx, grad_s):
        key, query, values, mask, s = ctx.saved_tensors
        c = ctx.c
        grad_s = grad_s.contiguous()
        d_key = torch.zeros_like(key)
        d_query = torch.zeros_like(query)
        d_values = torch.zeros_like(values)
        for j0, j1, i0, i1 in _spans(mask, values):
            t, e = _block(key, query, mask, j0, j1, i0, i1, c)
            z = e.sum(dim=2, keepdim=True).clamp_min(torch.finfo(e.dtype).tiny)
            p = e / z  # (B, cq, ck, d)
            g = grad_s[:, j0:j1, None]  # (B, cq, 1, d)
            pg = p * g
            d_values[:, i0:i1] += pg.sum(dim=1)
            # dlogit * (1 - t^2): the tanh derivative (the 1/c and c cancel)
            dpre = pg * (values[:, None, i0:i1] - s[:, j0:j1, None]) * (1 - t * t)
            d_key[:, i0:i1] += dpre.sum(dim=1)
            d_query[:, j0:j1] += dpre.sum(dim=2)
        return d_key, d_query, d_values, None, None


def token2token_eager(key, query, values, mask, c: float) -> torch.Tensor:
    """s (B, n, d) in plain PyTorch; arguments as :func:`disan.nn.kernels.token2token`."""
    return _EagerToken2Token.apply(key, query, values, mask, c)
