"""The Triton token2token kernel against the dense reference, values and gradients.

On a machine without a GPU these run in Triton's interpreter on CPU tensors (tests/conftest.py
sets TRITON_INTERPRET=1 there); with a GPU, on CUDA tensors. ``pytest -k triton`` selects them.
"""
import pytest
import torch

from disan.nn import kernels
from disan.nn.attention import token2token_dense
from disan.nn.kernels.triton import (
    CONFIGS,
    interpreting,
    needs_shift,
    token2token_triton,
)
from disan.nn.masks import attention_mask
from disan.nn.model import DiSANConfig, DiSANEncoder

pytestmark = pytest.mark.quick

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
# The interpreter's first configuration, or the smallest a GPU may pick: lengths and feature
# counts on both sides of a tile, so that partial tiles are covered.
TILE = CONFIGS[0].kwargs


def inputs(B, n, d, dtype, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return [(scale * torch.randn(B, n, d, generator=g, dtype=dtype)).to(DEVICE).requires_grad_() for _ in range(3)]


def padded_mask(B, n, structure):
    """A (B, n, n) mask with a full sentence, a half-padded one and an all-padding one."""
    pad = torch.ones(B, n, dtype=torch.bool)
    pad[1, (n + 1) // 2:] = False
    pad[2] = False
    return attention_mask(pad, structure).to(DEVICE)


def compare(args, mask, c=5.0, atol=None):
    """Triton against dense float64, values and gradients; float32 within ``atol`` (default 1e-5)."""
    ref_args = [a.detach().double().requires_grad_() for a in args]
    s_ref, _ = token2token_dense(*ref_args, mask, c)
    s = token2token_triton(*args, mask, c)
    tol = atol if atol is not None else (1e-5 if args[0].dtype == torch.float32 else 1e-10)
    assert s.dtype == args[0].dtype and torch.isfinite(s).all()
    assert torch.allclose(s.double(), s_ref, rtol=0, atol=tol)
    g = torch.randn(s_ref.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64).to(DEVICE)
    want = torch.autograd.grad(s_ref, ref_args, g)
    got = torch.autograd.grad(s, args, g.to(s.dtype))
    for a, b in zip(got, want):
        assert torch.isfinite(a).all()
        assert torch.allclose(a.double(), b, rtol=0, atol=tol)
    return s, got


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("structure", ["forward", "backward", "diag"])
def test_triton_equals_dense_in_values_and_gradients(structure, dtype):
    n, d = TILE["BJ"] + 3, TILE["BK"] + 5  # neither a multiple of its tile
    compare(inputs(3, n, d, dtype), padded_mask(3, n, structure))


def test_triton_with_a_random_mask_and_one_token():
    torch.manual_seed(1)
    random = torch.rand(3, 7, 7) > 0.6
    compare(inputs(3, 7, 4, torch.float64, seed=2), padded_mask(3, 7, random))
    compare(inputs(3, 1, 4, torch.float64, seed=3), padded_mask(3, 1, "forward"))


def test_triton_queries_without_keys_get_zero_and_give_zero_gradients():
    args = inputs(3, 6, 4, torch.float64, seed=4)
    mask = padded_mask(3, 6, "forward")  # query 0 has no key; sentence 2 is all padding
    s, grads = compare(args, mask)
    assert (s[:, 0] == 0).all() and (s[2] == 0).all()
    assert all((g[2] == 0).all() for g in grads)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_triton_is_exact_at_large_c(dtype):
    # c = 100 with logits up to 100: exp(c tanh) would overflow float32, and exp(-2c) underflows
    # float32, so the kernel must keep a running maximum
    assert needs_shift(100.0, torch.float32)
    args = inputs(3, 9, 6, dtype, seed=5, scale=60.0)
    compare(args, padded_mask(3, 9, "backward"), c=100.0, atol=100 * 5e-7 if dtype == torch.float32 else 1e-9)


def test_triton_keeps_nothing_of_size_n_squared_for_backward():
    torch.manual_seed(0)
    enc = DiSANEncoder(DiSANConfig(d_e=4, d_h=5, kernel="triton", dropout=0.0)).to(DEVICE)
    x = torch.randn(2, 11, 4, device=DEVICE, requires_grad=True)
    pad = torch.ones(2, 11, dtype=torch.bool, device=DEVICE)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(tuple(t.shape)) or t, lambda t: t):
        out = enc(x, pad)
    assert (2, 11, 11, 5) not in saved and (2, 11, 11) in saved  # the mask, but no (B, n, n, d) tensor
    out.sum().backward()
    assert torch.isfinite(x.grad).all()


def test_triton_kernel_choice():
    like = torch.empty(0, device=DEVICE)
    assert kernels.resolve("triton", like) == "triton"
    if DEVICE == "cuda":
        assert kernels.resolve("auto", like) == "triton"
    else:
        assert interpreting()
        assert kernels.resolve("auto", like) != "triton"  # CPU tensors go to C++ or eager, never the interpreter
    with pytest.raises(ValueError, match="Triton kernel takes"):
        kernels.resolve("triton", torch.empty(0, dtype=torch.long, device=DEVICE))
