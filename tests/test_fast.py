"""disan.fast: the C++ kernel and the eager path against the dense reference."""
import shutil
import warnings

import pytest
import torch

from disan.nn import fast
from disan.nn.attention import token2token_dense
from disan.nn.fast import token2token_fast
from disan.nn.masks import attention_mask

KERNELS = ["cpp", "eager"]
NODE = {"cpp": "_CppToken2TokenBackward", "eager": "_EagerToken2TokenBackward"}


@pytest.fixture(autouse=True)
def _float64():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


@pytest.fixture(params=KERNELS)
def kernel(request, monkeypatch):
    """Run the test with DISAN_KERNEL set to each implementation."""
    if request.param == "cpp" and shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    monkeypatch.setenv("DISAN_KERNEL", request.param)
    return request.param


@pytest.fixture
def cpp(monkeypatch):
    """Run the test with DISAN_KERNEL=cpp."""
    if shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    monkeypatch.setenv("DISAN_KERNEL", "cpp")


def inputs(B, n, d, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, n, d, generator=g, dtype=dtype).requires_grad_() for _ in range(3)]


def padded_mask(B, n, structure, seed=0):
    """A (B, n, n) mask of ``structure`` with a full, a half-padded and (B > 2) an all-padding sentence."""
    pad = torch.ones(B, n, dtype=torch.bool)
    if B > 1:
        pad[1, (n + 1) // 2:] = False
    if B > 2:
        pad[2] = False
    if structure == "random":
        structure = torch.rand(B, n, n, generator=torch.Generator().manual_seed(seed)) > 0.6
    return attention_mask(pad, structure)


def compare(args, mask, kernel, reference_args=None):
    """Values and gradients of token2token_fast against token2token_dense (on reference_args, default args).

    float64 to allclose's default tolerance; float32 within 1e-5 of a float64 reference.
    """
    ref_args = reference_args or args
    tol = {"rtol": 0, "atol": 1e-5} if args[0].dtype == torch.float32 else {}
    s_ref, _ = token2token_dense(*ref_args, mask)
    s = token2token_fast(*args, mask)
    assert type(s.grad_fn).__name__ == NODE[kernel]
    assert s.dtype == args[0].dtype and s.shape == s_ref.shape
    assert torch.allclose(s.to(s_ref.dtype), s_ref, **tol)
    g = torch.randn(s_ref.shape, generator=torch.Generator().manual_seed(7), dtype=s_ref.dtype)
    want = torch.autograd.grad(s_ref, ref_args, g)
    got = torch.autograd.grad(s, args, g.to(s.dtype))
    for a, b in zip(got, want):
        assert torch.isfinite(a).all()
        assert torch.allclose(a.to(b.dtype), b, **tol)
    return s


@pytest.mark.parametrize("structure", ["forward", "backward", "diag", "random"])
@pytest.mark.parametrize("d", [3, 37])  # below and not a multiple of the vector width
def test_equals_dense_in_values_and_gradients(kernel, structure, d):
    args = inputs(3, 9, d)
    compare(args, padded_mask(3, 9, structure), kernel)


@pytest.mark.parametrize("structure", ["forward", "diag", "random"])
def test_float32_within_1e5_of_float64_reference(kernel, structure):
    args64 = inputs(4, 30, 50, seed=2)
    args32 = [a.detach().float().requires_grad_() for a in args64]
    compare(args32, padded_mask(4, 30, structure), kernel, reference_args=args64)


def test_queries_without_keys_give_zero_and_zero_gradients(kernel):
    args = inputs(3, 6, 5)
    mask = padded_mask(3, 6, "forward")
    s = compare(args, mask, kernel)
    lonely = ~mask.any(dim=2)  # (B, n): the first token, padding, the all-padding sentence
    assert lonely[2].all() and lonely[0, 0] and not lonely[0, 1:].any()
    assert (s[lonely] == 0).all()
    grads = torch.autograd.grad(token2token_fast(*args, mask).sum(), args)
    assert (grads[1][lonely] == 0).all()                # no query gradient without a key
    assert (grads[0][2] == 0).all() and (grads[2][2] == 0).all()


@pytest.mark.parametrize("structure", ["forward", "diag", "self"])
def test_a_single_token(kernel, structure):
    args = inputs(2, 1, 4)
    mask = torch.ones(2, 1, 1, dtype=torch.bool) if structure == "self" else padded_mask(2, 1, structure)
    s = compare(args, mask, kernel)
    # alone, a token attends to nothing, or (if allowed) to itself with probability 1
    assert torch.allclose(s, args[2]) if structure == "self" else torch.equal(s, torch.zeros_like(s))


def test_non_contiguous_inputs(kernel):
    leaves = inputs(2, 12, 28, seed=3)
    args = [leaves[0].transpose(1, 2).contiguous().transpose(1, 2)[..., :14],  # column-major strides
            leaves[1][:, :, 7:21],                                              # a slice of the features
            leaves[2][..., ::2]]                                                # every other feature
    assert not any(a.is_contiguous() for a in args)
    forward = attention_mask(torch.ones(2, 12, dtype=torch.bool), "forward")
    compare(args, forward.transpose(1, 2), kernel)  # a backward mask, as a transposed view
    compare(args, torch.ones(12, 12, dtype=torch.bool).tril(-1).expand(2, 12, 12), kernel)  # a broadcast view


def test_gradcheck(kernel):
    args = inputs(2, 4, 3, seed=4)
    for structure in ("forward", "random"):
        mask = padded_mask(2, 4, structure)
        assert torch.autograd.gradcheck(lambda *a: token2token_fast(*a, mask), args)


def test_cpp_kernel_is_deterministic_across_thread_counts(cpp):
    args = inputs(8, 20, 33, dtype=torch.float32)
    mask = padded_mask(8, 20, "random")
    threads = torch.get_num_threads()
    results = []
    try:
        for t in (1, 3):
            torch.set_num_threads(t)
            s = token2token_fast(*args, mask)
            results.append([s, *torch.autograd.grad(s, args, torch.ones_like(s))])
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(*results):
        assert torch.equal(a, b)


def test_inputs_beyond_the_factorised_range_use_the_eager_path(cpp):
    mask = attention_mask(torch.ones(1, 5, dtype=torch.bool), "diag")
    for dtype in (torch.float32, torch.float64):
        limit = fast._exact_range(fast.C_SCALE, dtype)
        key, query, values = inputs(1, 5, 4, dtype=dtype, seed=5)
        with torch.no_grad():
            # a_i + q_j stays moderate although exp(2 a / c) alone would overflow (and exp(2 q / c) underflow)
            key[0, :, 0] += 1.5 * limit
            query[0, :, 0] -= 1.5 * limit
        s = token2token_fast(key, query, values, mask)
        assert type(s.grad_fn).__name__ == NODE["eager"]
        s_ref, _ = token2token_dense(key.double(), query.double(), values.double(), mask)
        assert torch.allclose(s.double(), s_ref, rtol=0, atol=1e-5)
        with torch.no_grad():  # just inside the range: the kernel, still exact
            key[0, :, 0] -= 0.55 * limit
            query[0, :, 0] += 0.55 * limit
        compare([key, query, values], mask, "cpp",
                reference_args=[t.detach().double().requires_grad_() for t in (key, query, values)])
    nan_key = key.detach().clone()
    nan_key[0, 0, 0] = float("nan")
    assert type(token2token_fast(nan_key.requires_grad_(), query, values, mask).grad_fn).__name__ == NODE["eager"]


def test_saturated_logits_inside_the_range(kernel):
    """|a + q| large enough that A_i Q_j overflows to inf (or underflows to 0): tanh is +-1 there."""
    for dtype in (torch.float32, torch.float64):
        limit = fast._exact_range(fast.C_SCALE, dtype)
        key, query, values = inputs(2, 6, 5, dtype=dtype, seed=6)
        with torch.no_grad():
            for x in (key, query):
                x[..., 0] = 0.95 * limit
                x[..., 1] = -0.95 * limit
        mask = padded_mask(2, 6, "diag")
        compare([key, query, values], mask, kernel,
                reference_args=[t.detach().double().requires_grad_() for t in (key, query, values)])


@pytest.fixture
def failing_build(monkeypatch):
    """Make the C++ build fail, as without a compiler or ninja."""
    def fail():
        raise RuntimeError("no compiler")
    monkeypatch.setattr(fast, "_extension", fail)
    fast._extension_or_none.cache_clear()
    yield
    fast._extension_or_none.cache_clear()


def test_auto_falls_back_to_eager_with_one_warning(failing_build, monkeypatch):
    monkeypatch.setenv("DISAN_KERNEL", "auto")
    args = inputs(2, 5, 3)
    mask = padded_mask(2, 5, "forward")
    with pytest.warns(RuntimeWarning, match="eager"):
        compare(args, mask, "eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compare(args, mask, "eager")
    assert fast.available_kernel() == "eager"


def test_cpp_raises_when_the_kernel_cannot_be_built(failing_build, monkeypatch):
    monkeypatch.setenv("DISAN_KERNEL", "cpp")
    with pytest.raises(RuntimeError, match="no compiler"):
        token2token_fast(*inputs(1, 3, 2), padded_mask(1, 3, "forward"))


def test_unknown_kernel_name_is_rejected(monkeypatch):
    monkeypatch.setenv("DISAN_KERNEL", "fortran")
    with pytest.raises(ValueError, match="DISAN_KERNEL"):
        token2token_fast(*inputs(1, 3, 2), padded_mask(1, 3, "forward"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_use_the_eager_path(monkeypatch):
    monkeypatch.setenv("DISAN_KERNEL", "auto")
    args = [a.detach().cuda().requires_grad_() for a in inputs(2, 6, 5)]
    mask = padded_mask(2, 6, "forward").cuda()
    compare(args, mask, "eager")



def test_bench_counts_the_work_of_a_step():
    """disan.bench's bound analysis: GEMM FLOPs (6 per weight and row) and dropout elements of a DiSAN step."""
    from disan.tools.bench import BATCH, _step_work

    n = 10
    encoder_weights = 2 * 5 * 300 * 300 + 2 * 600 * 600   # two DiSA blocks, source2token
    head_weights = 600 * 300 + 300 * 5                     # applied once per sentence
    flops, dropped = _step_work("fast", n)
    assert flops == 6 * BATCH * (n * encoder_weights + head_weights)
    assert dropped == BATCH * (8 * n * 300 + 2 * n * 600 + 600 + 300)
    lstm_flops, _ = _step_work("bilstm", n)
    lstm_weights = 2 * 2 * 4 * 300 * 300                   # two directions, input and recurrent
    want = 6 * BATCH * (n * (lstm_weights + 2 * 600 * 600) + head_weights)
    assert abs(lstm_flops - want) / want < 0.02            # less the recurrent gradient of a zero h_0


def test_bench_step_worker_reports_time_memory_and_kernel(cpp):
    from disan.tools.bench import step_worker

    out = step_worker("fast", 3, warmup=0, repeats=1, device="cpu")
    assert out["kernel"] == "cpp" and out["steps"] == 1 and out["ms"] > 0
    assert out["peak_mb"] >= out["base_mb"] > 0
