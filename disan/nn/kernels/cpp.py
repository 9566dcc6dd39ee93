"""The C++ token2token kernel: build, custom-op registration and autograd.

``csrc/token2token.cpp`` defines two torch custom ops for CPU tensors (float32, float64)::

    disan::token2token_forward(key, query, values, mask, c) -> (s, inv_z, key_factor, query_factor, direct)
    disan::token2token_backward(grad_s, key_factor, query_factor, direct, values, mask, s, inv_z, c)
        -> (d_key, d_query, d_values)

This module compiles it at first use with ``torch.utils.cpp_extension.load`` (needs ninja and a
C++ compiler) into PyTorch's extension cache (:func:`build_directory`), one build per CPU
capability, and registers in Python what the dispatcher needs beyond the CPU kernels: fake (meta)
implementations, so that ``torch.compile`` and ``torch.library.opcheck`` can trace the ops, and the
forward op's autograd formula, which calls the backward op. Every output but ``s`` is auxiliary, for
the backward op, and not differentiable: ``inv_z`` (1 / z per query and feature), and what the
kernels read for key and query (A and Q below, or copies of key and query in the direct variant)
with a 0-dim bool tensor ``direct`` saying which.

Design
------
Per element (j, i, k) with t = tanh((a_i + q_j) / c), E = exp(c t) * m, P = E / sum_i E and
s_j = sum_i P v_i, the gradients are
  dv_i = sum_j P g_j,   dlogit = P g_j (v_i - s_j),   da_i = sum_j dlogit (1 - t^2),
  dq_j = sum_i dlogit (1 - t^2).
Apart from a few multiply-adds per element, the cost is the transcendental functions evaluated
on the n^2 d elements, so the design is about evaluating few and cheap ones, on valid (j, i)
pairs only, and storing nothing n^2:

* One exp per element instead of a tanh and an exp. With y = (a_i + q_j) / c,
  exp(2 y) = A_i Q_j factorises into A = exp(2 a / c) and Q = exp(2 q / c), computed once per
  token (B n d exps, not B n^2 d). Then r = 1 / (1 + A_i Q_j) gives tanh(y) = 1 - 2 r,
  1 - tanh(y)^2 = 4 r (1 - r), and exp(c tanh(y)) = e^c exp(-2 c r); the constant e^c cancels
  in P, so the kernel evaluates E' = exp(-2 c r), whose argument lies in [-2c, 0], and
  1 <= 1 + A_i Q_j, so there is no division by 0.
* Each factor must be a normal float for the product to be exact, which holds for
  |a|, |q| <= c/2 |log(tiny)| (about 216 in float32 with c = 5, 1750 in float64; W h is O(1) in
  DiSAN). The pass that computes A and Q checks this; beyond it (or with a NaN) the kernel runs a
  direct variant that evaluates A_i Q_j = exp(2 (a_i + q_j) / c) per element (a second exp,
  ATen's, which saturates correctly), so the op gives the dense result for any input.
* For large c the sum z of E' in [e^-2c, 1] could underflow (2c beyond |log(tiny)|, about 87 in
  float32) and 1 / z overflow. For 2 c > |log(tiny)| / 2 (c > 21.8 in float32, 177 in float64)
  a shifted variant subtracts r_min, the smallest r over the row's valid keys: r is decreasing
  in A_i and Q_j > 0, so r_min = 1 / (1 + Q_j max_i A_i) needs only a max over the keys, per
  feature lane. The exponent -2c (r - r_min) lies in [-2c, 0] with 0 reached, so z >= 1. The
  backward pass recomputes the same shift. Below the bound (DiSAN's c = 5) the variant is not
  compiled in: the variants are template flags chosen once per call.
* The exp and the reciprocal are ATen's vector functions, except for float32 on AVX512 (the
  training case), where the bounded argument allows versions with half the instructions: no
  range checks in exp (2^round(x log2 e) times a degree-5 polynomial, scaled with vscalefps,
  relative error 8e-8), and rcp14 with one Newton step instead of a division (relative error
  2^-28). At B = 64, n = 40, d = 300 on one core this took the forward kernel from 6.2 ms to
  4.0 ms and the backward kernel from 9.3 ms to 7.1 ms.
* Only valid keys are visited: every query row gathers the indices of its True mask entries, so
  directional masks cost half the plane and padding costs nothing, whatever the mask's shape.
* Vectorised over the feature axis k (``at::vec::Vectorized``, compiled for the CPU capability
  PyTorch itself dispatches to, e.g. AVX512); for one chunk of features the row's accumulators
  stay in registers while the keys stream.
* Parallel (``at::parallel_for``, so ``torch.set_num_threads`` applies) over query rows (b, j)
  in the forward pass, and over sentences b in the backward pass: dq_j is a row sum but da_i
  and dv_i are column sums, and one thread per sentence owns all of them without atomics or
  per-thread copies. Every output is summed by one thread in a fixed order, so results do not
  depend on the number of threads. (The backward pass needs B >= threads to use them all.)
* Saved for backward: A, Q, values, the mask, s and 1/z (B, n, d each, the mask B n n); the
  backward op recomputes r and E' (one exp per element again)
  instead of storing anything of size n^2 d.
"""
from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("csrc") / "token2token.cpp"

# Compiler flags of the ATen vector code for each CPU capability PyTorch dispatches to on x86.
_CAPABILITY_FLAGS = {
    "AVX512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma",
               "-DCPU_CAPABILITY=AVX512", "-DCPU_CAPABILITY_AVX512"],
    "AVX2": ["-mavx2", "-mfma", "-DCPU_CAPABILITY=AVX2", "-DCPU_CAPABILITY_AVX2"],
}


def _ninja_on_path() -> None:
    """Put pip's ninja on PATH: it sits next to the interpreter, which PATH may not name
    (pyenv shims not yet rehashed after the install, an interpreter run by its full path)."""
    if shutil.which("ninja") is not None:
        return
    try:
        import ninja
    except ImportError:
        return
    os.environ["PATH"] = ninja.BIN_DIR + os.pathsep + os.environ.get("PATH", "")


def _name() -> str:
    return f"disan_token2token_ops_{torch.backends.cpu.get_cpu_capability().lower()}"  # one build per instruction set


def build_directory() -> Path:
    """Where the library is built and cached: under $TORCH_EXTENSIONS_DIR, else PyTorch's default extension
    root, one folder per instruction set, Python and PyTorch build (the library links against both)."""
    from torch.utils.cpp_extension import get_default_build_root

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()
    return Path(root) / f"{_name()}-{sys.implementation.cache_tag}-torch{torch.__version__}"


# The file PyTorch's build step creates in the build directory while it runs, and that every other process
# waits on until it is gone (torch.utils.file_baton.FileBaton).
TORCH_BUILD_LOCK = "lock"


@contextlib.contextmanager
def _build_step(directory: Path):
    """Run PyTorch's build step alone, and without waiting on a lock file left by a killed process.

    A process killed inside the step (by SIGKILL or SIGTERM, the OOM killer, a session that ends) leaves
    PyTorch's lock file behind, and every later process used to wait on it forever. Every process takes
    this ``flock`` first: the kernel drops it when its holder dies, so whoever holds it knows that no
    live process is inside the step, and that a PyTorch lock file there is stale.
    """
    import fcntl  # POSIX; elsewhere the ImportError reaches kernels.cpp_builds, which falls back to eager

    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "build.flock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        (directory / TORCH_BUILD_LOCK).unlink(missing_ok=True)
        yield


@functools.lru_cache(maxsize=None)
def load() -> None:
    """Build (or load from the cache) the C++ library and register the ``disan::`` ops; raises if it cannot be built."""
    from torch.utils.cpp_extension import load as load_extension

    _ninja_on_path()
    directory = build_directory()
    with _build_step(directory):
        load_extension(
            name=_name(),
            sources=[str(SOURCE)],
            extra_cflags=["-O3", "-fopenmp"] + _CAPABILITY_FLAGS.get(torch.backends.cpu.get_cpu_capability(), []),
            extra_ldflags=["-fopenmp"],
            build_directory=str(directory),
            is_python_module=False,  # the library registers its ops with the dispatcher when loaded
        )
    torch.library.register_fake("disan::token2token_forward", _forward_fake)
    torch.library.register_fake("disan::token2token_backward", _backward_fake)
    torch.library.register_autograd("disan::token2token_forward", _backward, setup_context=_setup_context)


def _forward_fake(key, query, values, mask, c):
    # The CPU kernel returns contiguous tensors whatever the input strides.
    def like():
        return key.new_empty(key.shape)
    return like(), like(), like(), like(), key.new_empty((), dtype=torch.bool)


def _backward_fake(grad_s, key_factor, query_factor, direct, values, mask, s, inv_z, c):
    return tuple(key_factor.new_empty(key_factor.shape) for _ in range(3))


def _setup_context(ctx, inputs, output):
    _, _, values, mask, c = inputs
    s, inv_z, key_factor, query_factor, direct = output
    ctx.save_for_backward(key_factor, query_factor, direct, values, mask, s, inv_z)
    ctx.mark_non_differentiable(inv_z, key_factor, query_factor, direct)
    # The auxiliary outputs never receive a gradient: without this, autograd would fill a (B, n, d)
    # tensor of zeros for each of them on every backward pass (about 2 ms at B = 64, n = 40, d = 300).
    ctx.set_materialize_grads(False)
    ctx.c = c


def _backward(ctx, grad_s, *_grads_of_auxiliary_outputs):
    if grad_s is None:  # grads are not materialised: s took no part in what is differentiated
        return None, None, None, None, None
    d_key, d_query, d_values = torch.ops.disan.token2token_backward(grad_s, *ctx.saved_tensors, ctx.c)
    return d_key, d_query, d_values, None, None


def supports(t: torch.Tensor) -> bool:
    """Whether the C++ ops take tensors like ``t`` (CPU, float32 or float64)."""
    return t.device.type == "cpu" and t.dtype in (torch.float32, torch.float64)


def token2token_cpp(key, query, values, mask, c: float) -> torch.Tensor:
    """s (B, n, d) from the C++ op (built at first use); arguments as :func:`disan.nn.kernels.token2token`."""
    load()
    return torch.ops.disan.token2token_forward(key, query, values, mask, float(c))[0]
