"""Masked multi-dimensional token2token attention in Triton, for CUDA tensors.

Per sentence b, query j, key i and feature k, with y = (a_i + q_j) / c and t = tanh(y):
the logit is c t, and the kernel works with the bounded form c t - c = -2 c r, where
r = 1 / (1 + exp(2 y)) = sigmoid(-2 y) = (1 - t) / 2: its argument lies in [-2c, 0], so no
exponential overflows and, for 2c below the exponent range of float32 (c < 40), no sum
underflows either, and no running maximum is needed. For larger c the kernels keep a
running maximum per (j, k) and rescale, as in FlashAttention (``SHIFT``).

Forward: one program per (sentence, block of queries, block of features) streams the key
blocks, skipping a block where no query of the block may attend any of its keys (the masked
half of a directional mask costs a mask load, not the arithmetic), and keeps the sums in
registers. It writes s (B, n, d) and lse = log sum_i exp(-2 c r) (B, n, d; +inf for a query
without keys), and nothing of size n^2.

Backward: P = exp(-2 c r - lse) is recomputed, as in the C++ kernel. dq_j is a sum over keys
and da_i, dv_i are sums over queries, so two kernels each own their output rows: one per
block of queries (dq), one per block of keys (da, dv); no atomics, so results do not depend
on scheduling. With dlogit = P g_j (v_i - s_j) and 1 - t^2 = 4 r (1 - r):
  dv_i = sum_j P g_j,   da_i = sum_j dlogit (1 - t^2),   dq_j = sum_i dlogit (1 - t^2).

Tile sizes come from ``triton.autotune`` on a GPU. The interpreter (``TRITON_INTERPRET=1``,
which runs the same kernels on the CPU for the tests) uses the first configuration, since
timing it means nothing.
"""
from __future__ import annotations

import os

import torch
import triton
import triton.language as tl
from torch.library import triton_op, wrap_triton

# Accumulation dtype of each input dtype: half precisions accumulate in float32.
_ACC = {torch.float16: tl.float32, torch.bfloat16: tl.float32, torch.float32: tl.float32, torch.float64: tl.float64}

CONFIGS = [
    triton.Config({"BJ": 16, "BI": 16, "BK": 32}, num_warps=4),
    triton.Config({"BJ": 16, "BI": 16, "BK": 64}, num_warps=4),
    triton.Config({"BJ": 32, "BI": 16, "BK": 32}, num_warps=4),
    triton.Config({"BJ": 16, "BI": 32, "BK": 32}, num_warps=4),
    triton.Config({"BJ": 32, "BI": 32, "BK": 32}, num_warps=8),
]


def interpreting() -> bool:
    """Whether Triton runs its kernels in the interpreter (on CPU tensors), as the tests do without a GPU."""
    return os.environ.get("TRITON_INTERPRET") == "1"


def _tuned(kernel, key):
    """Autotune over CONFIGS on a GPU; the first configuration in the interpreter."""
    if interpreting():
        return kernel, CONFIGS[0].kwargs
    return triton.autotune(configs=CONFIGS, key=key)(kernel), {}


@triton.jit
def _exponent(a, q, valid, two_over_c, minus_two_c):
    """r = sigmoid(-2 (a + q) / c) and the bounded exponent -2 c r (-inf where the pair is masked)."""
    r = tl.sigmoid(-(a + q) * two_over_c)
    x = tl.where(valid, r * minus_two_c, float("-inf"))
    return r, x


@triton.jit
def _forward_kernel(K, Q, V, M, S, LSE, n, d, two_over_c, minus_two_c,
                    ACC: tl.constexpr, SHIFT: tl.constexpr, BJ: tl.constexpr, BI: tl.constexpr, BK: tl.constexpr):
    b, jb, kb = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    j = jb * BJ + tl.arange(0, BJ)
    k = kb * BK + tl.arange(0, BK)
    jk = (j[:, None] < n) & (k[None, :] < d)
    base = b * n * d
    q = tl.load(Q + base + j[:, None] * d + k[None, :], mask=jk, other=0.0).to(ACC)   # (BJ, BK)
    z = tl.zeros((BJ, BK), dtype=ACC)
    num = tl.zeros((BJ, BK), dtype=ACC)
    m = tl.zeros((BJ, BK), dtype=ACC)          # the running maximum of the exponent (SHIFT only)
    if SHIFT:
        m = m + float("-inf")
    for i0 in range(0, n, BI):
        i = i0 + tl.arange(0, BI)
        valid = tl.load(M + b * n * n + j[:, None] * n + i[None, :],
                        mask=(j[:, None] < n) & (i[None, :] < n), other=0) != 0           # (BJ, BI)
        if tl.max(valid.to(tl.int32)) > 0:
            ik = (i[:, None] < n) & (k[None, :] < d)
            a = tl.load(K + base + i[:, None] * d + k[None, :], mask=ik, other=0.0).to(ACC)  # (BI, BK)
            v = tl.load(V + base + i[:, None] * d + k[None, :], mask=ik, other=0.0).to(ACC)
            _, x = _exponent(a[None, :, :], q[:, None, :], valid[:, :, None], two_over_c, minus_two_c)  # (BJ, BI, BK)
            if SHIFT:
                m_new = tl.maximum(m, tl.max(x, axis=1))
                m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)   # rows with no key yet
                scale = tl.exp(m - m_safe)
                e = tl.exp(x - m_safe[:, None, :])
                z = z * scale + tl.sum(e, axis=1)
                num = num * scale + tl.sum(e * v[None, :, :], axis=1)
                m = m_new
            else:
                e = tl.exp(x)
                z += tl.sum(e, axis=1)
                num += tl.sum(e * v[None, :, :], axis=1)
    has_key = z > 0
    s = tl.where(has_key, num / tl.where(has_key, z, 1.0), 0.0)
    shift = tl.where(m == float("-inf"), 0.0, m)
    lse = tl.where(has_key, shift + tl.log(tl.where(has_key, z, 1.0)), float("inf"))
    out = base + j[:, None] * d + k[None, :]
    tl.store(S + out, s.to(S.dtype.element_ty), mask=jk)
    tl.store(LSE + out, lse.to(LSE.dtype.element_ty), mask=jk)


@triton.jit
def _query_rows(Q, S, G, LSE, rows, jk, ACC: tl.constexpr):
    """What the backward pass needs of a block of queries: q, s, the gradient g and lse, each (BJ, BK)."""
    q = tl.load(Q + rows, mask=jk, other=0.0).to(ACC)
    s = tl.load(S + rows, mask=jk, other=0.0).to(ACC)
    g = tl.load(G + rows, mask=jk, other=0.0).to(ACC)
    lse = tl.load(LSE + rows, mask=jk, other=float("inf")).to(ACC)
    return q, s, g, lse


@triton.jit
def _pair_gradients(a, v, q, s, g, lse, valid, two_over_c, minus_two_c):
    """P g_j and dlogit (1 - t^2) = P g_j (v_i - s_j) 4 r (1 - r), each (BJ, BI, BK), with P recomputed from lse."""
    r, x = _exponent(a[None, :, :], q[:, None, :], valid[:, :, None], two_over_c, minus_two_c)
    pg = tl.exp(x - lse[:, None, :]) * g[:, None, :]
    return pg, pg * (v[None, :, :] - s[:, None, :]) * (4.0 * r * (1.0 - r))


@triton.jit
def _backward_query_kernel(K, Q, V, M, S, LSE, G, DQ, n, d, two_over_c, minus_two_c,
                           ACC: tl.constexpr, BJ: tl.constexpr, BI: tl.constexpr, BK: tl.constexpr):
    """dq for a block of queries: a sum over their keys."""
    b, jb, kb = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    j = jb * BJ + tl.arange(0, BJ)
    k = kb * BK + tl.arange(0, BK)
    jk = (j[:, None] < n) & (k[None, :] < d)
    base = b * n * d
    rows = base + j[:, None] * d + k[None, :]
    q, s, g, lse = _query_rows(Q, S, G, LSE, rows, jk, ACC)
    dq = tl.zeros((BJ, BK), dtype=ACC)
    for i0 in range(0, n, BI):
        i = i0 + tl.arange(0, BI)
        valid = tl.load(M + b * n * n + j[:, None] * n + i[None, :],
                        mask=(j[:, None] < n) & (i[None, :] < n), other=0) != 0
        if tl.max(valid.to(tl.int32)) > 0:
            ik = (i[:, None] < n) & (k[None, :] < d)
            a = tl.load(K + base + i[:, None] * d + k[None, :], mask=ik, other=0.0).to(ACC)
            v = tl.load(V + base + i[:, None] * d + k[None, :], mask=ik, other=0.0).to(ACC)
            _, dpre = _pair_gradients(a, v, q, s, g, lse, valid, two_over_c, minus_two_c)  # (BJ, BI, BK)
            dq += tl.sum(dpre, axis=1)
    tl.store(DQ + rows, dq.to(DQ.dtype.element_ty), mask=jk)


@triton.jit
def _backward_key_kernel(K, Q, V, M, S, LSE, G, DK, DV, n, d, two_over_c, minus_two_c,
                         ACC: tl.constexpr, BJ: tl.constexpr, BI: tl.constexpr, BK: tl.constexpr):
    """da and dv for a block of keys: sums over the queries that attend them."""
    b, ib, kb = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    i = ib * BI + tl.arange(0, BI)
    k = kb * BK + tl.arange(0, BK)
    ik = (i[:, None] < n) & (k[None, :] < d)
    base = b * n * d
    cols = base + i[:, None] * d + k[None, :]
    a = tl.load(K + cols, mask=ik, other=0.0).to(ACC)
    v = tl.load(V + cols, mask=ik, other=0.0).to(ACC)
    da = tl.zeros((BI, BK), dtype=ACC)
    dv = tl.zeros((BI, BK), dtype=ACC)
    for j0 in range(0, n, BJ):
        j = j0 + tl.arange(0, BJ)
        valid = tl.load(M + b * n * n + j[:, None] * n + i[None, :],
                        mask=(j[:, None] < n) & (i[None, :] < n), other=0) != 0
        if tl.max(valid.to(tl.int32)) > 0:
            jk = (j[:, None] < n) & (k[None, :] < d)
            rows = base + j[:, None] * d + k[None, :]
            q, s, g, lse = _query_rows(Q, S, G, LSE, rows, jk, ACC)
            pg, dpre = _pair_gradients(a, v, q, s, g, lse, valid, two_over_c, minus_two_c)  # (BJ, BI, BK)
            dv += tl.sum(pg, axis=0)
            da += tl.sum(dpre, axis=0)
    tl.store(DK + cols, da.to(DK.dtype.element_ty), mask=ik)
    tl.store(DV + cols, dv.to(DV.dtype.element_ty), mask=ik)


_forward, _FORWARD_META = _tuned(_forward_kernel, ["n", "d", "SHIFT"])
_backward_query, _QUERY_META = _tuned(_backward_query_kernel, ["n", "d"])
_backward_key, _KEY_META = _tuned(_backward_key_kernel, ["n", "d"])


def needs_shift(c: float, dtype: torch.dtype) -> bool:
    """Whether exp(-2c) can underflow in the accumulation dtype, so that sums need a running maximum."""
    acc = torch.float64 if dtype == torch.float64 else torch.float32
    return 2 * c >= -0.99 * torch.log(torch.tensor(torch.finfo(acc).tiny, dtype=torch.float64)).item()


def _grid(axis_block: str, n: int, d: int, B: int):
    """Programs over (sentence, blocks of the axis the kernel owns, blocks of features)."""
    return lambda meta: (B, triton.cdiv(n, meta[axis_block]), triton.cdiv(d, meta["BK"]))


@triton_op("disan::token2token_triton_forward", mutates_args=())
def _forward_op(key: torch.Tensor, query: torch.Tensor, values: torch.Tensor, mask: torch.Tensor,
                c: float) -> tuple[torch.Tensor, torch.Tensor]:
    """s (B, n, d) and lse (B, n, d) from contiguous (B, n, d) inputs and a contiguous (B, n, n) bool mask."""
    B, n, d = key.shape
    s, lse = torch.empty_like(values), torch.empty_like(values)
    wrap_triton(_forward)[_grid("BJ", n, d, B)](key, query, values, mask.view(torch.uint8), s, lse, n, d,
                                                2.0 / c, -2.0 * c, ACC=_ACC[key.dtype],
                                                SHIFT=needs_shift(c, key.dtype), **_FORWARD_META)
    return s, lse


@triton_op("disan::token2token_triton_backward", mutates_args=())
def _backward_op(grad_s: torch.Tensor, key: torch.Tensor, query: torch.Tensor, values: torch.Tensor,
                 mask: torch.Tensor, s: torch.Tensor, lse: torch.Tensor,
                 c: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(d key, d query, d values), recomputing P from lse; every tensor contiguous."""
    B, n, d = key.shape
    m8 = mask.view(torch.uint8)
    d_key, d_query, d_values = torch.empty_like(key), torch.empty_like(query), torch.empty_like(values)
    scales = (2.0 / c, -2.0 * c)
    wrap_triton(_backward_query)[_grid("BJ", n, d, B)](key, query, values, m8, s, lse, grad_s, d_query, n, d,
                                                       *scales, ACC=_ACC[key.dtype], **_QUERY_META)
    wrap_triton(_backward_key)[_grid("BI", n, d, B)](key, query, values, m8, s, lse, grad_s, d_key, d_values, n, d,
                                                     *scales, ACC=_ACC[key.dtype], **_KEY_META)
    return d_key, d_query, d_values


def _setup_context(ctx, inputs, output):
    key, query, values, mask, c = inputs
    s, lse = output
    ctx.save_for_backward(key, query, values, mask, s, lse)
    ctx.mark_non_differentiable(lse)
    ctx.set_materialize_grads(False)  # lse never gets a gradient: no zeros to fill
    ctx.c = c


def _backward(ctx, grad_s, _grad_lse):
    if grad_s is None:
        return None, None, None, None, None
    key, query, values, mask, s, lse = ctx.saved_tensors
    d_key, d_query, d_values = _backward_op(grad_s.contiguous(), key, query, values, mask, s, lse, ctx.c)
    return d_key, d_query, d_values, None, None


_forward_op.register_autograd(_backward, setup_context=_setup_context)


def supports(t: torch.Tensor) -> bool:
    """Whether the Triton kernels take tensors like ``t``: CUDA, or any device in the interpreter; floating point."""
    return (t.device.type == "cuda" or interpreting()) and t.dtype in _ACC


def token2token_triton(key, query, values, mask, c: float) -> torch.Tensor:
    """s (B, n, d); arguments as :func:`disan.nn.kernels.token2token`."""
    key, query, values, mask = (x.contiguous() for x in (key, query, values, mask))
    return _forward_op(key, query, values, mask, float(c))[0]
