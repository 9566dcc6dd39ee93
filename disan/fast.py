"""Fast, memory-lean multi-dimensional token2token attention.

Same result as :func:`disan.attention.token2token_dense`, without keeping any
(B, n, n, d) tensor alive between the forward and backward passes:

* the logits are bounded, |c * tanh(.)| < c = 5, so exp() needs no max-subtraction
  and a row's normaliser is at least exp(-5) whenever it has a valid key;
* queries are processed in chunks, and for every chunk only the span of keys that
  any of its queries may attend is computed; for the directional masks this skips
  the masked half of the n x n plane;
* the backward pass recomputes tanh and exp chunk by chunk instead of storing them.

Per element (j, i, k) with t = tanh((a_i + q_j) / c), E = exp(c t) * m,
P = E / sum_i E and s_j = sum_i P v_i, the gradients are
  dv_i = sum_j P g_j,   dlogit = P g_j (v_i - s_j),   da_i = sum_j dlogit (1 - t^2),
  dq_j = sum_i dlogit (1 - t^2).
"""
from __future__ import annotations

import torch

from .attention import C_SCALE

# Elements of one (B, chunk, keys, d) block; about 32 MB in float32 keeps the
# working set small while amortising the per-op overhead of eager PyTorch.
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


def _block(key, query, mask, j0, j1, i0, i1, c):
    """Recompute t (B, cq, ck, d) and the masked exponentials E of one block."""
    t = torch.tanh((key[:, None, i0:i1] + query[:, j0:j1, None]) * (1.0 / c))
    e = torch.exp(t * c) * mask[:, j0:j1, i0:i1, None]
    return t, e


class _Token2Token(torch.autograd.Function):
    @staticmethod
    def forward(ctx, key, query, values, mask, c):
        s = torch.zeros_like(values)
        for j0, j1, i0, i1 in _spans(mask, values):
            _, e = _block(key, query, mask, j0, j1, i0, i1, c)
            z = e.sum(dim=2)  # (B, cq, d); 0 only where a query has no valid key
            num = torch.einsum("bjid,bid->bjd", e, values[:, i0:i1])
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


def token2token_fast(key, query, values, mask, c: float = C_SCALE) -> torch.Tensor:
    """key = W1 h, query = W2 h + b1, values = h: (B, n, d); mask (B, n, n) bool [j, i].

    Returns s (B, n, d); rows with no valid key are 0.
    """
    return _Token2Token.apply(key, query, values, mask, c)
