"""Multi-dimensional token2token attention: the one place that chooses how it is computed.

:func:`token2token` computes s_j = sum_i P[j, i] * values_i with P the per-feature softmax over
the attended tokens i of c tanh((key_i + query_j) / c) (axes as in :mod:`disan.nn.masks`). The
kernel is a name, ``DiSANConfig.kernel``:

``"dense"``
    :func:`disan.nn.attention.token2token_dense`: materialises P (B, n, n, d); the reference
    every other path is tested against.
``"cpp"``
    The C++ custom ops (:mod:`disan.nn.kernels.cpp`, CPU float32/float64): one exp per valid
    element, nothing n^2 d kept for the backward pass. Built by ``pip install .``, or from a
    checkout at first use (waited for); an error if it cannot be built or does not take the tensors.
``"triton"``
    The Triton kernels (:mod:`disan.nn.kernels.triton`, CUDA tensors of any floating dtype; CPU
    tensors too when ``TRITON_INTERPRET=1`` runs them in Triton's interpreter, as the tests do):
    the same bounded exponent, valid key blocks only, nothing n^2 d kept for the backward pass.
``"eager"``
    Plain PyTorch chunked over queries (:mod:`disan.nn.kernels.eager`); any device and dtype.
``"auto"`` (the default)
    The environment variable ``DISAN_KERNEL``, if set (to any of these names), read at every
    call; otherwise ``"cpp"`` for CPU float32/float64 tensors where the C++ ops are built
    (``"eager"`` while a checkout builds them in the background, and where they cannot be built,
    with one warning), ``"triton"`` for CUDA tensors where Triton is installed, and ``"eager"``
    for everything else. The two give equal values (to rounding), so a model may switch midway.

``DISAN_KERNEL`` overrides ``"auto"`` only: a model configured with an explicit kernel keeps it.
No path returns P: a DiSA block whose P is looked at (its ``hook_attention`` hooked, or a trace)
computes it with :func:`disan.nn.attention.token2token_probs` instead of calling a kernel.
"""
from __future__ import annotations

import functools
import os
import warnings

import torch

from disan.nn.attention import C_SCALE, token2token_dense
from disan.nn.kernels import cpp
from disan.nn.kernels.eager import token2token_eager

KERNELS = ("auto", "cpp", "triton", "eager", "dense")


def cpp_ready(wait: bool = False) -> bool:
    """Whether the C++ ops serve now (:func:`disan.nn.kernels.cpp.ready`: False while they build in the
    background, unless ``wait``: then once built); False with one warning where they cannot be built (no
    compiler, no ninja, a build error)."""
    try:
        if wait:
            cpp.load()
        return cpp.ready()
    except Exception as err:
        warn_cpp_unavailable(str(err))
        return False


@functools.lru_cache(maxsize=None)
def warn_cpp_unavailable(reason: str) -> None:
    """The warning that the C++ ops cannot be built, once per reason and process: one line, attributed to this
    module rather than to a line of code (which Python's warnings would print beneath it)."""
    warnings.warn_explicit(f"the C++ token2token kernel is unavailable, using the eager path ({reason})",
                           RuntimeWarning, filename=__name__, lineno=0, module=__name__)


@functools.lru_cache(maxsize=None)
def _triton():
    """The Triton module, imported at first use (it imports Triton itself); None where Triton is not installed."""
    try:
        from disan.nn.kernels import triton
    except ImportError:
        return None
    return triton


def _check(name: str, where: str) -> str:
    if name not in KERNELS:
        raise ValueError(f"{where} must be one of {KERNELS}, not {name!r}")
    return name


def resolve(kernel: str = "auto", like: torch.Tensor | None = None, wait: bool = False) -> str:
    """The path ("cpp", "triton", "eager" or "dense") that ``kernel`` takes for tensors like ``like``
    (default: CPU float32).

    Starts building the C++ ops (in the background) the first time ``"auto"`` may use them; ``wait``
    waits for that build, for work whose every step should take one path (training, benchmarks).
    """
    like = torch.empty(0) if like is None else like
    name = _check(kernel, "kernel")
    if name == "auto":
        name = _check(os.environ.get("DISAN_KERNEL", "auto"), "DISAN_KERNEL")
    if name == "auto":
        if cpp.supports(like):
            return "cpp" if cpp_ready(wait) else "eager"
        triton = _triton() if like.device.type == "cuda" else None
        return "triton" if triton is not None and triton.supports(like) else "eager"
    if name == "cpp" and not cpp.supports(like):
        raise ValueError(f"the C++ kernel takes CPU float32/float64 tensors, not {like.device.type} {like.dtype}; "
                         f"use kernel 'auto' or 'eager'")
    if name == "triton" and (_triton() is None or not _triton().supports(like)):
        raise ValueError(f"the Triton kernel takes CUDA floating-point tensors (CPU ones with TRITON_INTERPRET=1) and "
                         f"needs the triton package, not {like.device.type} {like.dtype}; use kernel 'auto' or 'eager'")
    return name


def token2token(key, query, values, mask, c: float = C_SCALE, kernel: str = "auto") -> torch.Tensor:
    """key = W1 h, query = W2 h + b1, values = h: (B, n, d); mask (B, n, n) bool indexed [j, i].

    Returns s (B, n, d), 0 for a query without any key, by the path that ``kernel`` resolves to.
    """
    name = resolve(kernel, key)
    if name == "dense":
        return token2token_dense(key, query, values, mask, c)[0]
    if name == "cpp":
        return cpp.token2token_cpp(key, query, values, mask, c)
    if name == "triton":
        return _triton().token2token_triton(key, query, values, mask, c)
    return token2token_eager(key, query, values, mask, c)
