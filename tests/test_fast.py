"""disan.nn.kernels: the C++ ops and the eager path against the dense reference, and the kernel choice."""
import importlib.util
import math
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from disan.nn import kernels
from disan.nn.attention import C_SCALE, token2token_dense
from disan.nn.kernels import cpp, token2token
from disan.nn.masks import attention_mask

pytestmark = pytest.mark.quick

KERNELS = ["cpp", "eager"]
NODE = {"cpp": "GeneratedBackwardFor_disan_token2token_forward_defaultBackward",
        "eager": "_EagerToken2TokenBackward"}
has_compiler = pytest.mark.skipif(shutil.which("c++") is None, reason="no C++ compiler")


@pytest.fixture(autouse=True)
def _float64():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


@pytest.fixture(autouse=True)
def _no_kernel_override(monkeypatch):
    """DISAN_KERNEL of the environment running the tests must not change what they check."""
    monkeypatch.delenv("DISAN_KERNEL", raising=False)


@pytest.fixture(params=KERNELS)
def kernel(request):
    """Run the test on each faster path."""
    if request.param == "cpp" and shutil.which("c++") is None:
        pytest.skip("no C++ compiler")
    return request.param


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


def factorised_limit(c, dtype):
    """The largest |key|, |query| for which the C++ kernel factorises exp(2 (a + q) / c) (see kernels/cpp.py)."""
    return 0.99 * c / 2 * -math.log(torch.finfo(dtype).tiny)


def as_reference(args):
    """float64 leaves with the values of args."""
    return [t.detach().double().requires_grad_() for t in args]


def compare(args, mask, kernel, reference_args=None, c=C_SCALE, atol=1e-5):
    """Values and gradients of ``kernel`` against token2token_dense (on reference_args, default args).

    float64 to allclose's default tolerance; float32 within ``atol`` of a float64 reference.
    """
    ref_args = reference_args or args
    tol = {"rtol": 0, "atol": atol} if args[0].dtype == torch.float32 else {}
    s_ref, _ = token2token_dense(*ref_args, mask, c)
    s = token2token(*args, mask, c, kernel)
    assert type(s.grad_fn).__name__ == NODE[kernel]
    assert s.dtype == args[0].dtype and s.shape == s_ref.shape
    assert torch.allclose(s.to(s_ref.dtype), s_ref, **tol)
    g = torch.randn(s_ref.shape, generator=torch.Generator().manual_seed(7), dtype=s_ref.dtype).to(s_ref.device)
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
    grads = torch.autograd.grad(token2token(*args, mask, kernel=kernel).sum(), args)
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
        assert torch.autograd.gradcheck(lambda *a: token2token(*a, mask, kernel=kernel), args)


@has_compiler
def test_cpp_kernel_is_deterministic_across_thread_counts():
    args = inputs(8, 20, 33, dtype=torch.float32)
    mask = padded_mask(8, 20, "random")
    threads = torch.get_num_threads()
    results = []
    try:
        for t in (1, 3):
            torch.set_num_threads(t)
            s = token2token(*args, mask, kernel="cpp")
            results.append([s, *torch.autograd.grad(s, args, torch.ones_like(s))])
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(*results):
        assert torch.equal(a, b)


def test_inputs_beyond_the_factorised_range_stay_exact(kernel):
    """|a|, |q| past the factorised range (the C++ kernel's direct variant), with a + q moderate."""
    mask = padded_mask(2, 5, "diag")
    for dtype in (torch.float32, torch.float64):
        limit = factorised_limit(C_SCALE, dtype)
        key, query, values = inputs(2, 5, 4, dtype=dtype, seed=5)
        with torch.no_grad():
            # exp(2 a / c) alone would overflow and exp(2 q / c) underflow
            key[..., 0] += 1.5 * limit
            query[..., 0] -= 1.5 * limit
        compare([key, query, values], mask, kernel, reference_args=as_reference([key, query, values]))
        with torch.no_grad():  # just inside the range: the factorised variant, still exact
            key[..., 0] -= 0.55 * limit
            query[..., 0] += 0.55 * limit
        compare([key, query, values], mask, kernel, reference_args=as_reference([key, query, values]))


def test_saturated_logits_inside_the_range(kernel):
    """|a + q| large enough that A_i Q_j overflows to inf (or underflows to 0): tanh is +-1 there."""
    for dtype in (torch.float32, torch.float64):
        limit = factorised_limit(C_SCALE, dtype)
        key, query, values = inputs(2, 6, 5, dtype=dtype, seed=6)
        with torch.no_grad():
            for x in (key, query):
                x[..., 0] = 0.95 * limit
                x[..., 1] = -0.95 * limit
        mask = padded_mask(2, 6, "diag")
        compare([key, query, values], mask, kernel, reference_args=as_reference([key, query, values]))


def large_c_inputs(c, dtype, beyond=False, seed=8):
    """key, query, values for a large c: every logit near -c (or +c, by feature) with O(1) differences.

    Near -c, exp(c tanh) (the eager path) and exp(-2 c r) (the C++ kernel) underflow in float32
    for c = 100 unless shifted. ``beyond``: feature 0 also past the factorised range.
    """
    g = torch.Generator().manual_seed(seed)
    B, n, d = 3, 7, 19
    sign = torch.where(torch.rand(d, generator=g) < 0.7, -1.0, 1.0).double()
    key = c * sign * (2 + 0.1 * torch.randn(B, n, d, generator=g, dtype=torch.float64))
    query = c * sign * (1 + 0.1 * torch.randn(B, n, d, generator=g, dtype=torch.float64))
    if beyond:
        limit = factorised_limit(c, dtype)
        key[..., 0] += 1.5 * limit
        query[..., 0] -= 1.5 * limit
    values = torch.randn(B, n, d, generator=g, dtype=torch.float64)
    return [t.to(dtype).requires_grad_() for t in (key, query, values)]


@pytest.mark.parametrize("c", [100.0, 1000.0])  # past the shift bound of float32; 1000 also of float64
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("beyond", [False, True], ids=["in-range", "beyond-range"])
def test_large_c_is_exact(kernel, c, dtype, beyond):
    args = large_c_inputs(c, dtype, beyond)
    # float32: logits of size c carry an absolute error of about c * 1e-7 before the softmax
    compare(args, padded_mask(3, 7, "forward"), kernel, reference_args=as_reference(args), c=c,
            atol=c * 5e-7)


@pytest.mark.parametrize("c", [C_SCALE, 1000.0])
@pytest.mark.parametrize("beyond", [False, True], ids=["in-range", "beyond-range"])
def test_gradcheck_at_large_c_and_beyond_the_factorised_range(kernel, c, beyond):
    """Every variant of the C++ kernel: factorised or direct, shifted (c = 1000 in float64) or not."""
    key, query, values = large_c_inputs(c, torch.float64, beyond) if c > C_SCALE else inputs(2, 4, 3, seed=9)
    if beyond and c == C_SCALE:
        with torch.no_grad():
            key[..., 0] += 1.5 * factorised_limit(c, torch.float64)
            query[..., 0] -= 1.5 * factorised_limit(c, torch.float64)
    args = [t.detach()[:2, :4, :3].clone().requires_grad_() for t in (key, query, values)]
    mask = padded_mask(2, 4, "random")
    assert torch.autograd.gradcheck(lambda *a: token2token(*a, mask, c, kernel), args)


@has_compiler
def test_cpp_nan_inputs_give_nan_where_dense_does():
    args = [a.detach() for a in inputs(2, 5, 4, seed=10)]
    args[0][0, 1, 2] = float("nan")
    mask = padded_mask(2, 5, "random")
    s_ref, _ = token2token_dense(*args, mask)
    s = token2token(*args, mask, kernel="cpp")
    assert s_ref.isnan().any() and torch.equal(s.isnan(), s_ref.isnan())
    assert torch.allclose(s[~s.isnan()], s_ref[~s_ref.isnan()])


@has_compiler
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_cpp_ops_pass_opcheck(dtype):
    cpp.load()
    args = inputs(3, 5, 7, dtype=dtype, seed=11)
    mask = padded_mask(3, 5, "forward")
    forward = torch.library.opcheck(torch.ops.disan.token2token_forward.default, (*args, mask, 5.0))
    detached = [a.detach() for a in args]
    s, inv_z, key_factor, query_factor, direct = torch.ops.disan.token2token_forward(*detached, mask, 5.0)
    grad_s = torch.randn_like(s)
    backward = torch.library.opcheck(torch.ops.disan.token2token_backward.default,
                                     (grad_s, key_factor, query_factor, direct, detached[2], mask, s, inv_z, 5.0))
    for result in (forward, backward):
        assert set(result) == {"test_schema", "test_autograd_registration", "test_faketensor",
                               "test_aot_dispatch_dynamic"}
        assert set(result.values()) == {"SUCCESS"}
    s, *auxiliary = torch.ops.disan.token2token_forward(*args, mask, 5.0)
    assert s.requires_grad and not any(a.requires_grad for a in auxiliary)


@has_compiler
def test_cpp_op_compiles_in_a_full_graph():
    cpp.load()
    args = inputs(2, 4, 3, seed=12)
    mask = padded_mask(2, 4, "forward")

    def loss(key, query, values):
        s = torch.ops.disan.token2token_forward(key, query, values, mask, 5.0)[0]
        return (s * s).sum()

    compiled = torch.compile(loss, fullgraph=True)  # fails on a graph break
    want = torch.autograd.grad(loss(*args), args)
    got = torch.autograd.grad(compiled(*args), args)
    for a, b in zip(got, want):
        assert torch.allclose(a, b)


@has_compiler
def test_a_process_killed_in_the_build_step_does_not_block_the_next_one():
    """PyTorch's build step holds a lock file that a killed process leaves behind (SIGKILL, SIGTERM, the OOM
    killer); every later process used to wait on it forever."""
    cpp.load()  # built already: the process below only checks the build
    lock = cpp.build_directory() / cpp.TORCH_BUILD_LOCK
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from torch.utils.file_baton import FileBaton; "
                               f"assert FileBaton({str(lock)!r}).try_acquire(); print('held', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    holder.kill()
    holder.wait()
    assert lock.exists()  # what the killed process left
    # cpp.build(): load() would take the built library without entering the build step
    done = subprocess.run([sys.executable, "-c", "from disan.nn.kernels import cpp; cpp.build(); cpp.load(); "
                                                 "import torch; print(torch.ops.disan.token2token_forward.default)"],
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "token2token_forward" in done.stdout and not lock.exists()


def test_the_build_folder_is_named_by_the_source_contents_not_its_place(tmp_path, monkeypatch):
    """A checkout and an installed package (the same source elsewhere) share one build folder and library
    name; a changed source gets a new one, beside it."""
    folder, library = cpp.build_directory(), cpp.installed_library().name
    copy = tmp_path / "site-packages" / "token2token.cpp"
    copy.parent.mkdir()
    copy.write_bytes(cpp.SOURCE.read_bytes())
    monkeypatch.setattr(cpp, "SOURCE", copy)
    assert cpp.build_directory() == folder and cpp.installed_library().name == library
    copy.write_bytes(copy.read_bytes() + b"\n// changed\n")
    assert cpp.build_directory() != folder and cpp.build_directory().parent == folder.parent
    assert cpp.installed_library().name != library


@has_compiler
def test_disan_kernel_overrides_auto_only(monkeypatch):
    cpp.load()  # built, so that "auto" takes it at once
    args = inputs(2, 5, 3)
    mask = padded_mask(2, 5, "forward")
    assert type(token2token(*args, mask).grad_fn).__name__ == NODE["cpp"]
    monkeypatch.setenv("DISAN_KERNEL", "eager")
    assert type(token2token(*args, mask).grad_fn).__name__ == NODE["eager"]
    assert type(token2token(*args, mask, kernel="cpp").grad_fn).__name__ == NODE["cpp"]
    assert token2token(*args, mask, kernel="dense").grad_fn is not None
    assert kernels.resolve("auto") == "eager" and kernels.resolve("dense") == "dense"


@pytest.fixture
def failing_build(monkeypatch):
    """Make the C++ build fail, as without a compiler or ninja."""
    def fail():
        raise RuntimeError("no compiler")
    monkeypatch.setattr(cpp, "load", fail)
    monkeypatch.setattr(cpp, "ready", fail)
    kernels.warn_cpp_unavailable.cache_clear()
    yield
    kernels.warn_cpp_unavailable.cache_clear()


def test_auto_falls_back_to_eager_with_one_warning(failing_build):
    args = inputs(2, 5, 3)
    mask = padded_mask(2, 5, "forward")
    with pytest.warns(RuntimeWarning, match="eager"):
        s = token2token(*args, mask)
    assert type(s.grad_fn).__name__ == NODE["eager"] and torch.allclose(s, token2token_dense(*args, mask)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert type(token2token(*args, mask).grad_fn).__name__ == NODE["eager"]
    assert kernels.resolve() == "eager"


def test_cpp_raises_when_the_kernel_cannot_be_built(failing_build):
    with pytest.raises(RuntimeError, match="no compiler"):
        token2token(*inputs(1, 3, 2), padded_mask(1, 3, "forward"), kernel="cpp")


def test_cpp_rejects_tensors_it_does_not_take():
    args = [a.detach().half() for a in inputs(1, 3, 2)]
    with pytest.raises(ValueError, match="float32/float64"):
        token2token(*args, padded_mask(1, 3, "forward"), kernel="cpp")


def test_unknown_kernel_names_are_rejected(monkeypatch):
    with pytest.raises(ValueError, match="kernel"):
        token2token(*inputs(1, 3, 2), padded_mask(1, 3, "forward"), kernel="fortran")
    monkeypatch.setenv("DISAN_KERNEL", "fortran")
    with pytest.raises(ValueError, match="DISAN_KERNEL"):
        token2token(*inputs(1, 3, 2), padded_mask(1, 3, "forward"))


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


@cuda
def test_cuda_tensors_take_triton_where_it_is_installed_else_the_eager_path():
    like = torch.empty(0, device="cuda")
    assert kernels.resolve("auto", like) == ("triton" if importlib.util.find_spec("triton") else "eager")


@cuda
@pytest.mark.parametrize("structure", ["forward", "backward", "diag", "random"])
def test_the_eager_path_on_cuda_tensors_equals_dense(structure):
    args = [a.detach().cuda().requires_grad_() for a in inputs(3, 9, 37)]
    compare(args, padded_mask(3, 9, structure).cuda(), "eager")


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_the_eager_path_on_cuda_tensors_is_exact_at_large_c(dtype):
    args = [a.detach().cuda().requires_grad_() for a in large_c_inputs(100.0, dtype)]
    compare(args, padded_mask(3, 7, "forward").cuda(), "eager", reference_args=as_reference(args), c=100.0,
            atol=100.0 * 5e-7)


def test_bench_counts_the_work_of_a_step():
    """disan.bench's bound analysis: GEMM FLOPs (6 per weight and row) and dropout elements of a DiSAN step."""
    from disan.tools.bench import BATCH, step_work

    n = 10
    encoder_weights = 2 * 5 * 300 * 300 + 2 * 600 * 600   # two DiSA blocks, source2token
    head_weights = 600 * 300 + 300 * 5                     # applied once per sentence
    flops, dropped = step_work("fast", n)
    assert flops == 6 * BATCH * (n * encoder_weights + head_weights)
    assert dropped == BATCH * (8 * n * 300 + 2 * n * 600 + 600 + 300)
    lstm_flops, _ = step_work("bilstm", n)
    lstm_weights = 2 * 2 * 4 * 300 * 300                   # two directions, input and recurrent
    want = 6 * BATCH * (n * (lstm_weights + 2 * 600 * 600) + head_weights)
    assert abs(lstm_flops - want) / want < 0.02            # less the recurrent gradient of a zero h_0


@has_compiler
def test_bench_step_worker_reports_time_memory_and_kernel():
    from disan.tools.bench import step_worker

    out = step_worker("fast", 3, warmup=0, repeats=1, device="cpu")
    assert out["kernel"] == "cpp" and out["steps"] == 1 and out["ms"] > 0
    assert out["peak_mb"] >= out["base_mb"] > 0


def test_the_eager_kernel_is_the_equation_written_as_loops():
    # s_j = sum_i softmax_i(c tanh((key_i + query_j) / c) + M_ji) h_i per feature; a query with no key gets 0
    from disan.nn.kernels.eager import token2token_eager
    torch.manual_seed(0)
    n, d, c = 4, 3, 5.0
    key, query, values = (torch.randn(1, n, d, dtype=torch.float64) for _ in range(3))
    mask = attention_mask(torch.ones(1, n, dtype=torch.bool), "forward")      # j attends i < j
    got = token2token_eager(key, query, values, mask, c)[0]
    for j in range(n):
        for k in range(d):
            logits = [c * math.tanh((key[0, i, k] + query[0, j, k]).item() / c) for i in range(j)]
            weights = [math.exp(v) / sum(math.exp(u) for u in logits) for v in logits]
            want = sum(w * values[0, i, k].item() for i, w in enumerate(weights))
            assert got[j, k].item() == pytest.approx(want, abs=1e-12)
