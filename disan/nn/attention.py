"""Multi-dimensional attention: token2token (inside a DiSA block) and source2token.

Shapes follow :mod:`disan.nn.masks`: probabilities are (B, n_query j, n_key i, d).
The dense functions here materialise the (B, n, n, d) tensors and return the
probabilities, so they serve the trace and are the reference that the faster
kernels in :mod:`disan.nn.kernels` are tested against.
"""
from __future__ import annotations

import torch

C_SCALE = 5.0  # c in f(h_i, h_j) = c * tanh((W1 h_i + W2 h_j + b1) / c)
# Cells of P multiplied into the values at a time by :func:`weighted_sum`: 2**18 float32 values (1 MB) stay
# in a core's cache between the product and the sum; a 200-token sentence of 300 features goes 4 rows at a time.
PRODUCT_CELLS = 2**18


def token2token_logits(key: torch.Tensor, query: torch.Tensor, c: float = C_SCALE) -> torch.Tensor:
    """key = W1 h (B, n, d), query = W2 h + b1 (B, n, d) -> logits (B, n_query, n_key, d)."""
    return c * torch.tanh((key[:, None, :, :] + query[:, :, None, :]) / c)


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """Softmax over ``dim`` restricted to ``mask`` (broadcastable to logits).

    Masked entries get exactly 0; a slice with no valid entry is all zeros (not NaN),
    in value and gradient.
    """
    # The lowest finite value, not -inf: beside one valid entry it still gets exp(lowest - peak) = 0, and
    # a slice with none gives a uniform softmax instead of NaN, which the product with the mask zeroes.
    # torch.softmax does max, exp, sum and division in one pass over the data.
    lowest = torch.finfo(logits.dtype).min
    return torch.softmax(logits.masked_fill(~mask, lowest), dim=dim) * mask


def token2token_probs(key, query, mask, c: float = C_SCALE) -> torch.Tensor:
    """P (B, n, n, d) of multi-dimensional token2token attention: the softmax over the attended tokens i of
    :func:`token2token_logits`, per feature. key, query: (B, n, d); mask: (B, n, n) bool indexed [j, i].

    Where no gradient is wanted (a trace), P is made by the same operations in place
    (:func:`probs_in_place`): the same bits, without the temporaries of n²·d values.
    """
    if torch.is_grad_enabled() and (key.requires_grad or query.requires_grad):
        return masked_softmax(token2token_logits(key, query, c), mask[..., None], dim=2)  # (B, n, n, d)
    return probs_in_place(key, query, mask, c)


def token2token_dense(key, query, values, mask, c: float = C_SCALE):
    """Reference multi-dimensional token2token attention.

    key, query, values: (B, n, d); mask: (B, n, n) bool indexed [j, i].
    Returns s (B, n, d) with s_j = sum_i P[j, i] * values_i, and P (B, n, n, d) (:func:`token2token_probs`).
    """
    probs = token2token_probs(key, query, mask, c)
    return weighted_sum(probs, values), probs


def weighted_sum(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """s_j = sum_i P[j, i] * values_i, feature by feature: probs (B, n, n, d), values (B, n, d) -> (B, n, d).

    A multiply and a sum over a few query rows at a time (:data:`PRODUCT_CELLS`), not one einsum: the einsum
    is a batched matrix-vector product over (B, d) that first copies P into a (B, d, n, n) layout, which made
    it 40% of a 200-token trace. Differentiable; within float32 rounding of the einsum (tests/test_core.py).
    """
    B, n, _, d = probs.shape
    rows = max(1, PRODUCT_CELLS // max(1, n * d))
    out = values.new_empty(B, n, d)
    for b in range(B):
        for j in range(0, n, rows):
            out[b, j:j + rows] = (probs[b, j:j + rows] * values[b]).sum(dim=1)   # (rows, n, d) -> (rows, d)
    return out


def probs_in_place(key, query, mask, c: float = C_SCALE) -> torch.Tensor:
    """P (B, n, n, d) of :func:`token2token_probs` without autograd: :func:`token2token_logits` and
    :func:`masked_softmax` operation by operation, each but the softmax in place, so that two tensors of
    n²·d values are made instead of seven (1.7x faster for 64 sentences of 24 tokens and 300 features,
    where every pass is a walk through memory). The same bits as the reference (tests/test_core.py)."""
    logits = key[:, None, :, :] + query[:, :, None, :]               # (B, n, n, d)
    logits.div_(c).tanh_().mul_(c)
    logits.masked_fill_(~mask[..., None], torch.finfo(logits.dtype).min)
    probs = torch.softmax(logits, dim=2)
    del logits
    return probs.mul_(mask[..., None])


def uniform_probs(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """mask (B, n, n) bool [j, i] -> (B, n, n): 1 / (valid keys of j) over each query's valid keys, 0 elsewhere
    (a query without any key: a row of zeros, as :func:`masked_softmax` gives it)."""
    weights = mask.to(dtype)
    return weights / weights.sum(dim=-1, keepdim=True).clamp_min(1.0)


def token2token_uniform(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """s_j = the mean of values_i over the keys i that query j may attend: token2token attention with P
    frozen to :func:`uniform_probs`, the same for every feature. values (B, n, d), mask (B, n, n) -> (B, n, d)."""
    return uniform_probs(mask, values.dtype) @ values


def source2token_probs(logits: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """logits (B, n, d), pad_mask (B, n) -> P (B, n, d): a softmax over tokens per feature."""
    return masked_softmax(logits, pad_mask[..., None], dim=1)
