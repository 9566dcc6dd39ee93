"""Fast, memory-lean multi-dimensional token2token attention.

Same result as :func:`disan.nn.attention.token2token_dense`, without keeping any
(B, n, n, d) tensor alive between the forward and backward passes. Per element
(j, i, k) with t = tanh((a_i + q_j) / c), E = exp(c t) * m, P = E / sum_i E and
s_j = sum_i P v_i, the gradients are
  dv_i = sum_j P g_j,   dlogit = P g_j (v_i - s_j),   da_i = sum_j dlogit (1 - t^2),
  dq_j = sum_i dlogit (1 - t^2).

Two implementations, chosen by the environment variable ``DISAN_KERNEL``
(read at every call): ``cpp`` (the C++ kernel; an error if it cannot be built),
``eager`` (plain PyTorch), ``auto`` (the default: ``cpp`` where it builds, else
``eager`` with one warning). CUDA tensors, dtypes other than float32/float64
and inputs outside the factorised kernel's range (below) always use ``eager``.

The C++ kernel
--------------
Apart from a few multiply-adds per element, the cost is the transcendental
functions evaluated on the n^2 d elements, so the design is about evaluating
few and cheap ones, on valid (j, i) pairs only, and storing nothing n^2:

* One exp per element instead of a tanh and an exp. With y = (a_i + q_j) / c,
  exp(2 y) = A_i Q_j factorises into A = exp(2 a / c) and Q = exp(2 q / c),
  computed once per token (B n d exps, not B n^2 d). Then r = 1 / (1 + A_i Q_j)
  gives tanh(y) = 1 - 2 r, 1 - tanh(y)^2 = 4 r (1 - r), and
  exp(c tanh(y)) = e^c exp(-2 c r); the constant e^c cancels in P, so the
  kernel evaluates E' = exp(-2 c r), whose argument lies in [-2c, 0]: no
  overflow, no max-subtraction, and 1 <= 1 + A_i Q_j, so no division by 0.
  Each factor must be a normal float for the product to be exact, which holds
  for |a|, |q| <= c/2 * |log(tiny)| (about 216 in float32 with c = 5, 1750 in
  float64; W h is O(1) in DiSAN). The pass that computes A and Q checks this;
  beyond it (or with a NaN) the call goes to the eager path.
* The exp and the reciprocal are ATen's vector functions, except for float32 on
  AVX512 (the training case), where the bounded argument allows versions with
  half the instructions: no range checks in exp (2^round(x log2 e) times a
  degree-5 polynomial, scaled with vscalefps, relative error 8e-8), and
  rcp14 with one Newton step instead of a division (relative error 2^-28).
  At B = 64, n = 40, d = 300 on one core this took the forward kernel from
  6.2 ms to 4.0 ms and the backward kernel from 9.3 ms to 7.1 ms.
* Only valid keys are visited: every query row gathers the indices of its
  True mask entries, so directional masks cost half the plane and padding
  costs nothing, whatever the mask's shape.
* Vectorised over the feature axis k (``at::vec::Vectorized``, compiled for the
  CPU capability PyTorch itself dispatches to, e.g. AVX512); for one chunk of
  features the row's accumulators stay in registers while the keys stream.
* Parallel (``at::parallel_for``, so ``torch.set_num_threads`` applies) over
  query rows (b, j) in the forward pass, and over sentences b in the backward
  pass: dq_j is a row sum but da_i and dv_i are column sums, and one thread per
  sentence owns all of them without atomics or per-thread copies. Every output
  is summed by one thread in a fixed order, so results do not depend on the
  number of threads. (The backward pass needs B >= threads to use them all.)
* Saved for backward: A, Q, values, the mask, s and 1/z (B, n, d each); the
  backward pass recomputes r and E' (one exp per element again) instead of
  storing anything of size n^2.
It is compiled at first use with ``torch.utils.cpp_extension.load_inline``
(needs ninja and a C++ compiler) into PyTorch's extension cache, one build per
CPU capability.

The eager fallback
------------------
Plain PyTorch, chunked over queries: for every chunk only the span of keys
that any of its queries may attend is computed (for the directional masks this
skips the masked half of the plane), and the backward pass recomputes tanh and
exp chunk by chunk. It is portable (any device, any dtype) but each op makes a
pass over a (B, chunk, keys, d) block in memory.
"""
from __future__ import annotations

import functools
import math
import os
import shutil
import warnings

import torch
from torch.autograd.function import once_differentiable

from disan.nn.attention import C_SCALE

KERNELS = ("auto", "cpp", "eager")

# Elements of one (B, chunk, keys, d) block of the eager path; about 32 MB in
# float32 keeps the working set small while amortising the per-op overhead.
BLOCK_ELEMENTS = 8_000_000


# ----------------------------------------------------------------------------- eager


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


class _EagerToken2Token(torch.autograd.Function):
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


# ----------------------------------------------------------------------------- C++

_CPP_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <algorithm>
#include <atomic>
#include <vector>

using at::vec::Vectorized;

namespace {

// One chunk of up to Vectorized<T>::size() features [k0, k0 + count) of a (n, d) row-major matrix.
template <typename T>
struct Lanes {
  int64_t k0;
  int64_t count;

  Vectorized<T> load(const T* row) const {
    return count == Vectorized<T>::size() ? Vectorized<T>::loadu(row + k0)
                                          : Vectorized<T>::loadu(row + k0, count);
  }
  void store(T* row, const Vectorized<T>& x) const { x.store(row + k0, count); }
  void add(T* row, const Vectorized<T>& x) const { store(row, load(row) + x); }
};

// The indices i with mask_row[i] set, written to keys; returns how many.
inline int64_t gather_keys(const bool* mask_row, int64_t n, int64_t* keys) {
  int64_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (mask_row[i]) keys[m++] = i;
  }
  return m;
}

// 1 / x for x >= 1 and exp(x) for x in [-2c, 0]: ATen's, except for float on AVX512 (below).
template <typename T>
inline Vectorized<T> reciprocal(const Vectorized<T>& x) { return x.reciprocal(); }
template <typename T>
inline Vectorized<T> exp_bounded(const Vectorized<T>& x) { return x.exp_u20(); }

#if defined(CPU_CAPABILITY_AVX512)
// Half the instructions of the general versions (see the module docstring).
// rcp14 and one Newton step; x is capped at 2^100 (1 / x < 1e-30 is 0 to the sums) because
// the Newton step of x = inf (A_i Q_j overflowing) would be inf * 0.
template <>
inline Vectorized<float> reciprocal(const Vectorized<float>& x) {
  const __m512 capped = _mm512_min_ps(x, _mm512_set1_ps(0x1p100f));
  const __m512 y = _mm512_rcp14_ps(capped);
  return _mm512_mul_ps(y, _mm512_fnmadd_ps(capped, y, _mm512_set1_ps(2.f)));
}
// 2^round(x log2 e) times a degree-5 fit of 2^f on |f| <= 1/2, scaled with vscalefps; no
// over/underflow checks, which x in [-2c, 0] does not need.
template <>
inline Vectorized<float> exp_bounded(const Vectorized<float>& x) {
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.4426950408889634f));  // x log2(e)
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 p = _mm512_set1_ps(1.3276441642263287e-3f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6755424431198e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5507133790913994e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022119705018946e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931469669927636e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0000000716578037f));
  return _mm512_scalef_ps(p, n);
}
#endif

// r = 1 / (1 + A_i Q_j) = (1 - tanh(y)) / 2 and the shifted exponential E' = exp(-2 c r).
template <typename T>
struct Pair {
  Vectorized<T> r, e;
  Pair(const Vectorized<T>& a, const Vectorized<T>& q, const Vectorized<T>& minus_two_c)
      : r(reciprocal(a * q + Vectorized<T>(1))), e(exp_bounded(r * minus_two_c)) {}
};

// s_j = sum_i E' v_i / z_j and inv_z_j = 1 / z_j with z_j = sum_i E' (0 for a query without keys).
template <typename T>
void forward_kernel(const T* A, const T* Q, const T* V, const bool* M, T* S, T* IZ,
                    int64_t B, int64_t n, int64_t d, T c) {
  using Vec = Vectorized<T>;
  const Vec minus_two_c(-2 * c);
  at::parallel_for(0, B * n, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> keys(n);
    for (int64_t row = begin; row < end; ++row) {      // row = b * n + j
      const int64_t m = gather_keys(M + row * n, n, keys.data());
      const T* Ab = A + (row / n) * n * d;               // (n, d) of sentence b
      const T* Vb = V + (row / n) * n * d;
      for (int64_t k0 = 0; k0 < d; k0 += Vec::size()) {
        const Lanes<T> l{k0, std::min<int64_t>(Vec::size(), d - k0)};
        if (m == 0) {
          l.store(S + row * d, Vec(0));
          l.store(IZ + row * d, Vec(0));
          continue;
        }
        const Vec q = l.load(Q + row * d);
        Vec z(0), num(0);
        for (int64_t x = 0; x < m; ++x) {
          const int64_t i = keys[x];
          const Pair<T> p(l.load(Ab + i * d), q, minus_two_c);
          z = z + p.e;
          num = at::vec::fmadd(p.e, l.load(Vb + i * d), num);
        }
        const Vec inv_z = z.reciprocal();
        l.store(S + row * d, num * inv_z);
        l.store(IZ + row * d, inv_z);
      }
    }
  });
}

// dA (= da), dQ (= dq), dV (= dv) from the saved forward quantities and G = dL/ds.
// 1 - t^2 = 4 r (1 - r): the sums take r (1 - r) and are multiplied by 4 once.
template <typename T>
void backward_kernel(const T* A, const T* Q, const T* V, const bool* M, const T* S, const T* IZ,
                     const T* G, T* dA, T* dQ, T* dV, int64_t B, int64_t n, int64_t d, T c) {
  using Vec = Vectorized<T>;
  const Vec minus_two_c(-2 * c), four(4);
  at::parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> keys(n);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t off = b * n * d;                     // sentence b's (n, d) block
      std::fill(dA + off, dA + off + n * d, T(0));
      std::fill(dV + off, dV + off + n * d, T(0));
      for (int64_t j = 0; j < n; ++j) {
        const int64_t row = b * n + j;
        const int64_t m = gather_keys(M + row * n, n, keys.data());
        for (int64_t k0 = 0; k0 < d; k0 += Vec::size()) {
          const Lanes<T> l{k0, std::min<int64_t>(Vec::size(), d - k0)};
          if (m == 0) {
            l.store(dQ + row * d, Vec(0));
            continue;
          }
          const Vec q = l.load(Q + row * d), s = l.load(S + row * d);
          const Vec g_over_z = l.load(G + row * d) * l.load(IZ + row * d);
          Vec dq(0);
          for (int64_t x = 0; x < m; ++x) {
            const int64_t i = off + keys[x] * d;
            const Pair<T> p(l.load(A + i), q, minus_two_c);
            const Vec pg = p.e * g_over_z;                                  // P g_j
            l.add(dV + i, pg);
            const Vec dpre = pg * (l.load(V + i) - s) * at::vec::fnmadd(p.r, p.r, p.r);  // dlogit (1 - t^2) / 4
            l.add(dA + i, dpre);
            dq = dq + dpre;
          }
          l.store(dQ + row * d, dq * four);
        }
      }
      at::vec::map([&](Vec x) { return x * four; }, dA + off, dA + off, n * d);
    }
  });
}

// dst = exp(scale * src) over [begin, end); returns the largest |src| seen (NaN if any is NaN).
template <typename T>
T exp_scaled(const T* src, T* dst, int64_t begin, int64_t end, T scale) {
  using Vec = Vectorized<T>;
  Vec largest(0);
  for (int64_t k = begin; k < end; k += Vec::size()) {
    const int64_t count = std::min<int64_t>(Vec::size(), end - k);
    const Vec x = Vec::loadu(src + k, count);
    largest = at::vec::maximum(largest, x.abs());
    (x * Vec(scale)).exp().store(dst + k, count);
  }
  return at::vec::vec_reduce_all<T>([](Vec& a, Vec& b) { return at::vec::maximum(a, b); }, largest);
}

void check(const torch::Tensor& x, const torch::Tensor& like, const char* name) {
  TORCH_CHECK(x.is_contiguous() && x.sizes() == like.sizes() && x.scalar_type() == like.scalar_type(),
              name, " must be contiguous with the shape and dtype of key");
}

}  // namespace

// A = exp(2 key / c) and Q = exp(2 query / c); nothing if some |key| or |query| exceeds limit or is NaN.
std::vector<torch::Tensor> factorise(torch::Tensor key, torch::Tensor query, double c, double limit) {
  check(query, key, "query");
  auto A = torch::empty_like(key), Q = torch::empty_like(key);
  std::atomic<bool> in_range{true};
  AT_DISPATCH_FLOATING_TYPES(key.scalar_type(), "token2token_factorise", [&] {
    const auto scale = static_cast<scalar_t>(2 / c);
    at::parallel_for(0, key.numel(), 4096, [&](int64_t begin, int64_t end) {
      const scalar_t largest = std::max(
          exp_scaled(key.data_ptr<scalar_t>(), A.data_ptr<scalar_t>(), begin, end, scale),
          exp_scaled(query.data_ptr<scalar_t>(), Q.data_ptr<scalar_t>(), begin, end, scale));
      if (!(largest <= limit)) in_range = false;
    });
  });
  if (!in_range) return {};
  return {A, Q};
}

std::vector<torch::Tensor> forward(torch::Tensor A, torch::Tensor Q, torch::Tensor V, torch::Tensor M, double c) {
  check(Q, A, "Q"); check(V, A, "V");
  TORCH_CHECK(A.dim() == 3 && M.is_contiguous() && M.scalar_type() == torch::kBool &&
              M.sizes() == torch::IntArrayRef({A.size(0), A.size(1), A.size(1)}),
              "the mask must be a contiguous bool (B, n, n) tensor for (B, n, d) inputs");
  auto S = torch::empty_like(A), IZ = torch::empty_like(A);
  AT_DISPATCH_FLOATING_TYPES(A.scalar_type(), "token2token_forward", [&] {
    forward_kernel<scalar_t>(A.data_ptr<scalar_t>(), Q.data_ptr<scalar_t>(), V.data_ptr<scalar_t>(),
                             M.data_ptr<bool>(), S.data_ptr<scalar_t>(), IZ.data_ptr<scalar_t>(),
                             A.size(0), A.size(1), A.size(2), static_cast<scalar_t>(c));
  });
  return {S, IZ};
}

std::vector<torch::Tensor> backward(torch::Tensor A, torch::Tensor Q, torch::Tensor V, torch::Tensor M,
                                    torch::Tensor S, torch::Tensor IZ, torch::Tensor G, double c) {
  check(Q, A, "Q"); check(V, A, "V"); check(S, A, "S"); check(IZ, A, "IZ"); check(G, A, "G");
  auto dA = torch::empty_like(A), dQ = torch::empty_like(A), dV = torch::empty_like(A);
  AT_DISPATCH_FLOATING_TYPES(A.scalar_type(), "token2token_backward", [&] {
    backward_kernel<scalar_t>(A.data_ptr<scalar_t>(), Q.data_ptr<scalar_t>(), V.data_ptr<scalar_t>(),
                              M.data_ptr<bool>(), S.data_ptr<scalar_t>(), IZ.data_ptr<scalar_t>(),
                              G.data_ptr<scalar_t>(), dA.data_ptr<scalar_t>(), dQ.data_ptr<scalar_t>(),
                              dV.data_ptr<scalar_t>(), A.size(0), A.size(1), A.size(2),
                              static_cast<scalar_t>(c));
  });
  return {dA, dQ, dV};
}
"""

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


@functools.lru_cache(maxsize=None)
def _extension():
    """Build (or load from the cache) the C++ kernel; raises if it cannot be built."""
    from torch.utils.cpp_extension import load_inline

    _ninja_on_path()
    capability = torch.backends.cpu.get_cpu_capability()
    return load_inline(
        name=f"disan_token2token_{capability.lower()}",  # one build per instruction set
        cpp_sources=_CPP_SOURCE,
        functions=["factorise", "forward", "backward"],
        extra_cflags=["-O3", "-fopenmp"] + _CAPABILITY_FLAGS.get(capability, []),
        extra_ldflags=["-fopenmp"],
    )


@functools.lru_cache(maxsize=None)
def _extension_or_none():
    """The C++ kernel, or None (with one warning) where it cannot be built."""
    try:
        return _extension()
    except Exception as err:  # no compiler, no ninja, a build error: the eager path still works
        warnings.warn(f"disan.fast: C++ token2token kernel unavailable, using the eager path ({err})",
                      RuntimeWarning)
        return None


def _exact_range(c: float, dtype: torch.dtype) -> float:
    """Largest |a|, |q| for which exp(2 a / c) and exp(2 q / c) are normal floats (their product is then exact)."""
    return -0.5 * c * math.log(torch.finfo(dtype).tiny) * 0.99


class _CppToken2Token(torch.autograd.Function):
    @staticmethod
    def forward(ctx, ext, key, query, values, mask, A, Q, c):
        values, mask = values.contiguous(), mask.contiguous()
        s, inv_z = ext.forward(A, Q, values, mask, c)  # (B, n, d) each
        ctx.save_for_backward(A, Q, values, mask, s, inv_z)
        ctx.ext, ctx.c = ext, c
        return s

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_s):
        d_key, d_query, d_values = ctx.ext.backward(*ctx.saved_tensors, grad_s.contiguous(), ctx.c)
        return None, d_key, d_query, d_values, None, None, None, None


def kernel_name() -> str:
    """``DISAN_KERNEL``, validated: auto, cpp or eager."""
    name = os.environ.get("DISAN_KERNEL", "auto")
    if name not in KERNELS:
        raise ValueError(f"DISAN_KERNEL must be one of {KERNELS}, not {name!r}")
    return name


def _usable_extension(device: torch.device):
    """The C++ extension if DISAN_KERNEL and the device allow it (building it at first use), else None."""
    name = kernel_name()
    if name == "eager" or device.type != "cpu":
        return None
    return _extension() if name == "cpp" else _extension_or_none()


def available_kernel(device="cpu") -> str:
    """``cpp`` or ``eager``: what :func:`token2token_fast` runs on ``device`` for float32/float64 inputs in range."""
    return "eager" if _usable_extension(torch.device(device)) is None else "cpp"


def _cpp_kernel_for(key, query, values, mask):
    """The C++ extension if it applies to these inputs, else None."""
    ext = _usable_extension(key.device)
    if ext is None or key.numel() == 0 or mask.dtype != torch.bool:
        return None
    if {t.device.type for t in (query, values, mask)} != {"cpu"}:
        return None
    if {t.dtype for t in (key, query, values)} not in ({torch.float32}, {torch.float64}):
        return None
    return ext


def token2token_fast(key, query, values, mask, c: float = C_SCALE) -> torch.Tensor:
    """key = W1 h, query = W2 h + b1, values = h: (B, n, d); mask (B, n, n) bool [j, i].

    Returns s (B, n, d); rows with no valid key are 0.
    """
    ext = _cpp_kernel_for(key, query, values, mask)
    if ext is not None:
        factors = ext.factorise(key.detach().contiguous(), query.detach().contiguous(), c,
                                _exact_range(c, key.dtype))  # [A, Q], or [] out of range
        if factors:
            return _CppToken2Token.apply(ext, key, query, values, mask, *factors, c)
    return _EagerToken2Token.apply(key, query, values, mask, c)
