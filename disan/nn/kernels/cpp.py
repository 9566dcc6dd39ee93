"""The C++ token2token kernel: build, custom-op registration and autograd.

``csrc/token2token.cpp`` defines two torch custom ops for CPU tensors (float32, float64)::

    disan::token2token_forward(key, query, values, mask, c) -> (s, inv_z, key_factor, query_factor, direct)
    disan::token2token_backward(grad_s, key_factor, query_factor, direct, values, mask, s, inv_z, c)
        -> (d_key, d_query, d_values)

Where the library comes from (:func:`load`, :func:`ready`), so that no user waits for a compiler:

* ``pip install .`` builds it (``setup.py``) for the instruction set of the building machine, into the
  package beside this file, named by :func:`library_name`; an installed package loads it with
  ``torch.ops.load_library`` and never compiles at run time. Where the name differs at run time (another
  instruction set, e.g. the package moved to another machine or ``ATEN_CPU_CAPABILITY`` set, or another
  torch build), the package builds at run time as a checkout does.
* Otherwise (a checkout) it is built with ``torch.utils.cpp_extension.load`` (needs ninja and a C++
  compiler) into :func:`build_directory`, a folder named by a hash of the source's contents, the
  instruction set and its flags, the torch build and the Python tag, from a copy of the source kept in
  that folder: ``build.ninja`` records the source's path, so a checkout and an installed package (same
  source, same folder) never rebuild each other, and a changed source builds into a new folder.
  :func:`ready`, which ``"auto"`` asks, starts that build in a background process and answers False
  until it is done, so the eager path serves meanwhile; :func:`load`, which ``"cpp"`` asks, waits for it.

Once loaded, this module registers in Python what the dispatcher needs beyond the CPU kernels: fake (meta)
implementations, so that ``torch.compile`` and ``torch.library.opcheck`` can trace the ops, and the
forward op's autograd formula, which calls the backward op. Every output but ``s`` is auxiliary, for
the backward op, and not differentiable: ``inv_z`` (1 / z per query and feature), and what the
kernels read for key and query (A and Q below, or copies of key and query in the direct variant)
with a 0-dim bool tensor ``direct`` saying which.

This file imports nothing of ``disan``: ``setup.py`` loads it alone to name and build the library.

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
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import torch

SOURCE = Path(__file__).with_name("csrc") / "token2token.cpp"

# Compiler flags of the ATen vector code for each CPU capability PyTorch dispatches to on x86.
_CAPABILITY_FLAGS = {
    "AVX512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mfma",
               "-DCPU_CAPABILITY=AVX512", "-DCPU_CAPABILITY_AVX512"],
    "AVX2": ["-mavx2", "-mfma", "-DCPU_CAPABILITY=AVX2", "-DCPU_CAPABILITY_AVX2"],
}
LINK_FLAGS = ("-fopenmp",)


def linux() -> bool:
    """Whether this is Linux, the one system the library is built for (see :func:`build_unavailable`)."""
    return sys.platform.startswith("linux")


def build_unavailable() -> str | None:
    """Why this machine cannot build the library, or None. It is built for Linux with GCC's (or clang's) flags:
    OpenMP, the x86 vector flags, a POSIX file lock around the build. macOS's clang has no OpenMP of its own
    and Windows builds with MSVC, whose flags and library names differ, so there (and on a Linux without a
    C++ compiler) nothing is built, at install or at run time, and the portable PyTorch path serves."""
    if not linux():
        return f"it is built on Linux only, not on {sys.platform}"
    compiler = os.environ.get("CXX") or "c++"  # the compiler torch.utils.cpp_extension calls
    if shutil.which(compiler) is None:
        return f"no C++ compiler ({compiler}) on PATH"
    return None


def compile_flags() -> list[str]:
    """The compiler's flags for the instruction set PyTorch dispatches to here (``ATEN_CPU_CAPABILITY`` included)."""
    return ["-O3", "-fopenmp", *_CAPABILITY_FLAGS.get(torch.backends.cpu.get_cpu_capability(), [])]


def library_name() -> str:
    """``disan_token2token_<instruction set>_<hash>``: the hash of what the library depends on (the source's
    contents, the flags, the torch build, the Python tag), so that a library of that name is always current."""
    parts = [SOURCE.read_bytes(), " ".join(compile_flags() + list(LINK_FLAGS)).encode(), torch.__version__.encode(),
             str(torch.version.git_version).encode(), sys.implementation.cache_tag.encode()]
    digest = hashlib.sha256(b"".join(hashlib.sha256(part).digest() for part in parts)).hexdigest()
    return f"disan_token2token_{torch.backends.cpu.get_cpu_capability().lower()}_{digest[:16]}"


def installed_library() -> Path:
    """Where ``pip install .`` puts the library (``setup.py``): beside this file."""
    return Path(__file__).with_name(library_name() + sysconfig.get_config_var("EXT_SUFFIX"))


def build_directory() -> Path:
    """Where a checkout builds the library: under $TORCH_EXTENSIONS_DIR, else PyTorch's default extension
    root (~/.cache/torch_extensions), the folder :func:`library_name` names."""
    from torch.utils.cpp_extension import get_default_build_root

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()
    return Path(root) / library_name()


def _built_library() -> Path:
    return build_directory() / f"{library_name()}.so"


def _library_at_hand() -> Path | None:
    """The library to load without building: the installed one, else the checkout's build if it is done."""
    if not linux():
        return None  # none is built elsewhere (and a POSIX lock guards the build folder)
    if installed_library().is_file():
        return installed_library()
    built = _built_library()
    return built if built.is_file() and not _building_elsewhere(build_directory()) else None


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


# The file PyTorch's build step creates in the build directory while it runs, and that every other process
# waits on until it is gone (torch.utils.file_baton.FileBaton).
TORCH_BUILD_LOCK = "lock"
_FLOCK = "build.flock"


@contextlib.contextmanager
def _build_step(directory: Path):
    """Run PyTorch's build step alone, and without waiting on a lock file left by a killed process.

    A process killed inside the step (by SIGKILL or SIGTERM, the OOM killer, a session that ends) leaves
    PyTorch's lock file behind, and every later process used to wait on it forever. Every process takes
    this ``flock`` first: the kernel drops it when its holder dies, so whoever holds it knows that no
    live process is inside the step, and that a PyTorch lock file there is stale.
    """
    import fcntl  # POSIX; elsewhere the ImportError reaches kernels.cpp_ready, which falls back to eager

    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / _FLOCK, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        (directory / TORCH_BUILD_LOCK).unlink(missing_ok=True)
        yield


def _building_elsewhere(directory: Path) -> bool:
    """Whether a process is inside the build step of ``directory`` now (it holds the ``flock``)."""
    import fcntl

    try:
        with open(directory / _FLOCK, "a") as probe:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    return False


def build() -> Path:
    """Compile the library into :func:`build_directory` (a no-op when it is current; waits for another
    process building it) and return its path; raises if it cannot be built."""
    from torch.utils.cpp_extension import load as load_extension

    why = build_unavailable()
    if why is not None:
        raise RuntimeError(why)
    _ninja_on_path()
    directory = build_directory()
    with _build_step(directory):
        source = directory / SOURCE.name  # the copy build.ninja names; rewritten only if it differs (its time)
        if not source.is_file() or source.read_bytes() != SOURCE.read_bytes():
            shutil.copyfile(SOURCE, directory / f"{SOURCE.name}.tmp")
            os.replace(directory / f"{SOURCE.name}.tmp", source)
        load_extension(name=library_name(), sources=[str(source)], extra_cflags=compile_flags(),
                       extra_ldflags=list(LINK_FLAGS), build_directory=str(directory),
                       is_python_module=False)  # the library registers its ops with the dispatcher when loaded
    return _built_library()


# Loading (once) and starting the background build (once) happen under this lock: the app calls from several threads.
_lock = threading.Lock()
_loaded = False
# This process's background build (ready()), and its failure.
_background: subprocess.Popen | None = None
_failure: RuntimeError | None = None


def load() -> None:
    """Load the library and register the ``disan::`` ops: the installed one, else the checkout's build,
    built first (or waited for) where needed; raises if it cannot be built."""
    global _loaded
    with _lock:
        if _loaded:
            return
        torch.ops.load_library(str(_library_at_hand() or build()))
        torch.library.register_fake("disan::token2token_forward", _forward_fake)
        torch.library.register_fake("disan::token2token_backward", _backward_fake)
        torch.library.register_autograd("disan::token2token_forward", _backward, setup_context=_setup_context)
        _loaded = True


def ready() -> bool:
    """Whether the ops can serve now, without waiting: True once loaded, or loadable (installed, or built);
    otherwise starts the build in a background process (once per process; it goes on if this one ends) and
    returns False until it is done. Raises if that build failed."""
    global _background, _failure
    if _loaded:
        return True
    with _lock:
        if _failure is not None:
            raise _failure
        if _background is None:
            if _library_at_hand() is None:
                why = build_unavailable()
                if why is not None:  # said once, by the caller's warning; no build is started
                    _failure = RuntimeError(why)
                    raise _failure
                _background = _start_build()
                return False
        elif _background.poll() is None:
            return False
        elif _background.returncode != 0:
            log = build_directory() / "build.log"
            _failure = RuntimeError(f"the build failed (see {log}): {log.read_text(errors='replace')[-2000:]}")
            raise _failure
    load()
    return True


def _start_build() -> subprocess.Popen:
    """:func:`build` in another process, at low priority (behind the work it serves), logging to build.log."""
    build_directory().mkdir(parents=True, exist_ok=True)
    root = str(Path(__file__).resolve().parents[3])  # the folder that holds disan/
    with open(build_directory() / "build.log", "w") as log:
        return subprocess.Popen(
            [sys.executable, "-c", f"import os, sys; os.nice(10); sys.path.insert(0, {root!r}); "
                                   "from disan.nn.kernels import cpp; cpp.build()"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)


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
    """s (B, n, d) from the C++ op (waiting for its build where needed); arguments as
    :func:`disan.nn.kernels.token2token`."""
    load()
    return torch.ops.disan.token2token_forward(key, query, values, mask, float(c))[0]
