// Multi-dimensional token2token attention on the CPU, registered as the torch custom ops
//   disan::token2token_forward(key, query, values, mask, c)
//       -> (s, inv_z, key_factor, query_factor, direct)
//   disan::token2token_backward(grad_s, key_factor, query_factor, direct, values, mask, s, inv_z, c)
//       -> (d_key, d_query, d_values)
// The forward op's last three outputs (the factors the kernels read for key and query, and whether
// they are the direct copies) go to the backward op, which so needs no exps of its own to refactorise.
// The design (one exp per element, valid keys only, vectorised over features, nothing n^2 kept)
// is explained in disan/nn/kernels/cpp.py.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

using at::Tensor;
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
// Half the instructions of the general versions (see kernels/cpp.py).
// rcp14 and one Newton step; x is capped at 2^100 (1 / x < 1e-30 is 0 to the sums) because the
// Newton step of x = inf (A_i Q_j overflowing) would be inf * 0. The cap is the first operand of
// min so that a NaN x (min returns its second operand then) stays NaN.
template <>
inline Vectorized<float> reciprocal(const Vectorized<float>& x) {
  const __m512 capped = _mm512_min_ps(_mm512_set1_ps(0x1p100f), x);
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

// The element (j, i) of one feature chunk, in one of four variants fixed at compile time:
//   kDirect:  K and Q hold key and query themselves and A_i Q_j = exp(2 (a_i + q_j) / c) is
//             evaluated per element (inputs beyond the factorised range); otherwise K = A and
//             Q = exp(2 query / c), and A_i Q_j is one multiplication.
//   kShifted: E' = exp(-2 c (r - r_min)) with r_min the smallest r over the row's valid keys, so
//             that z >= 1 for any c; otherwise E' = exp(-2 c r) (no extra pass; safe for small c).
template <typename T, bool kDirect, bool kShifted>
struct Row {
  using Vec = Vectorized<T>;
  Vec q, minus_two_c, two_over_c, offset;  // offset = 2 c r_min (kShifted only)

  // A_i Q_j = exp(2 (a_i + q_j) / c); monotone in a_i (K) for a fixed query.
  Vec ratio(const Vec& k) const {
    if constexpr (kDirect) return ((k + q) * two_over_c).exp();
    else return k * q;
  }

  // r = 1 / (1 + A_i Q_j) = (1 - tanh(y)) / 2.
  Vec r(const Vec& k) const { return reciprocal(ratio(k) + Vec(1)); }

  // The exponential E' of an element whose r is given.
  Vec e(const Vec& r) const {
    if constexpr (kShifted) return exp_bounded(at::vec::fmadd(r, minus_two_c, offset));
    else return exp_bounded(r * minus_two_c);
  }

  // For the query in lanes l of q_row, whose m >= 1 valid keys are K + keys[x] * d.
  Row(const Lanes<T>& l, const T* q_row, const T* K, const int64_t* keys, int64_t m, int64_t d, T c)
      : q(l.load(q_row)), minus_two_c(-2 * c), two_over_c(2 / c), offset(0) {
    if constexpr (kShifted) {
      // r is decreasing in K, so r_min is r at the largest K of the row (per feature lane)
      Vec largest = l.load(K + keys[0] * d);
      for (int64_t x = 1; x < m; ++x) largest = at::vec::maximum(largest, l.load(K + keys[x] * d));
      offset = r(largest) * Vec(2 * c);
    }
  }
};

// s_j = sum_i E' v_i / z_j and inv_z_j = 1 / z_j with z_j = sum_i E' (0 for a query without keys).
template <typename T, bool kDirect, bool kShifted>
void forward_kernel(const T* K, const T* Q, const T* V, const bool* M, T* S, T* IZ,
                    int64_t B, int64_t n, int64_t d, T c) {
  using Vec = Vectorized<T>;
  at::parallel_for(0, B * n, 1, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> keys(n);
    for (int64_t row = begin; row < end; ++row) {      // row = b * n + j
      const int64_t m = gather_keys(M + row * n, n, keys.data());
      const T* Kb = K + (row / n) * n * d;               // (n, d) of sentence b
      const T* Vb = V + (row / n) * n * d;
      for (int64_t k0 = 0; k0 < d; k0 += Vec::size()) {
        const Lanes<T> l{k0, std::min<int64_t>(Vec::size(), d - k0)};
        if (m == 0) {
          l.store(S + row * d, Vec(0));
          l.store(IZ + row * d, Vec(0));
          continue;
        }
        const Row<T, kDirect, kShifted> w(l, Q + row * d, Kb, keys.data(), m, d, c);
        Vec z(0), num(0);
        for (int64_t x = 0; x < m; ++x) {
          const int64_t i = keys[x];
          const Vec e = w.e(w.r(l.load(Kb + i * d)));
          z = z + e;
          num = at::vec::fmadd(e, l.load(Vb + i * d), num);
        }
        const Vec inv_z = z.reciprocal();
        l.store(S + row * d, num * inv_z);
        l.store(IZ + row * d, inv_z);
      }
    }
  });
}

// d_key, d_query, d_values from the forward quantities and G = dL/ds, with E' recomputed exactly
// as in the forward pass. Per element: P = E' / z, dv_i += P g_j, dlogit = P g_j (v_i - s_j),
// da_i += dlogit (1 - t^2), dq_j += dlogit (1 - t^2); 1 - t^2 = 4 r (1 - r), and the sums take
// r (1 - r) and are multiplied by 4 once.
template <typename T, bool kDirect, bool kShifted>
void backward_kernel(const T* K, const T* Q, const T* V, const bool* M, const T* S, const T* IZ,
                     const T* G, T* dK, T* dQ, T* dV, int64_t B, int64_t n, int64_t d, T c) {
  using Vec = Vectorized<T>;
  const Vec four(4);
  at::parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
    std::vector<int64_t> keys(n);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t off = b * n * d;                     // sentence b's (n, d) block
      std::fill(dK + off, dK + off + n * d, T(0));
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
          const Row<T, kDirect, kShifted> w(l, Q + row * d, K + off, keys.data(), m, d, c);
          const Vec s = l.load(S + row * d);
          const Vec g_over_z = l.load(G + row * d) * l.load(IZ + row * d);
          Vec dq(0);
          for (int64_t x = 0; x < m; ++x) {
            const int64_t i = off + keys[x] * d;
            const Vec r = w.r(l.load(K + i));
            const Vec pg = w.e(r) * g_over_z;                                  // P g_j
            l.add(dV + i, pg);
            const Vec dpre = pg * (l.load(V + i) - s) * at::vec::fnmadd(r, r, r);  // dlogit (1 - t^2) / 4
            l.add(dK + i, dpre);
            dq = dq + dpre;
          }
          l.store(dQ + row * d, dq * four);
        }
      }
      at::vec::map([&](Vec x) { return x * four; }, dK + off, dK + off, n * d);
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

// What the kernels read for key and query: A = exp(2 key / c) and exp(2 query / c) when the
// factorisation is exact, i.e. both are normal floats, which holds for |key|, |query| up to
// c / 2 |log(tiny)| (with a 1% margin); otherwise (or with a NaN) key and query, direct = true.
struct Factors {
  Tensor K, Q;
  bool direct;
};

template <typename T>
Factors factorise(const Tensor& key, const Tensor& query, double c) {
  const double limit = 0.99 * c / 2 * -std::log(static_cast<double>(std::numeric_limits<T>::min()));
  Tensor A = at::empty_like(key), Q = at::empty_like(query);
  const T* k = key.data_ptr<T>();
  const T* q = query.data_ptr<T>();
  std::atomic<bool> in_range{true};
  at::parallel_for(0, key.numel(), 4096, [&](int64_t begin, int64_t end) {
    const T scale = static_cast<T>(2 / c);
    const T largest = std::max(exp_scaled(k, A.data_ptr<T>(), begin, end, scale),
                               exp_scaled(q, Q.data_ptr<T>(), begin, end, scale));
    if (!(largest <= limit)) in_range = false;
  });
  if (in_range) return {A, Q, false};
  return {key, query, true};
}

// E' = exp(-2 c r) lies in [e^-2c, 1]: its sum z >= e^-2c stays normal, and 1 / z and the
// backward pass's g / z stay far from overflow, while 2 c <= |log(tiny)| / 2 (c <= 21.8 in float,
// 177 in double). Beyond that the exponent is shifted (one more pass over each row's keys).
template <typename T>
bool needs_shift(double c) {
  return 2 * c > -std::log(static_cast<double>(std::numeric_limits<T>::min())) / 2;
}

// Calls f(std::bool_constant<kDirect>, std::bool_constant<kShifted>) with the runtime flags.
template <typename F>
void with_variant(bool direct, bool shifted, F&& f) {
  if (direct) {
    if (shifted) f(std::true_type{}, std::true_type{});
    else f(std::true_type{}, std::false_type{});
  } else {
    if (shifted) f(std::false_type{}, std::true_type{});
    else f(std::false_type{}, std::false_type{});
  }
}

void check_inputs(const Tensor& key, const Tensor& query, const Tensor& values, const Tensor& mask, double c) {
  TORCH_CHECK(key.device().is_cpu(), "disan::token2token runs on CPU tensors, not ", key.device());
  TORCH_CHECK(key.dim() == 3, "key must be (B, n, d), not ", key.sizes());
  for (const Tensor* t : {&query, &values}) {
    TORCH_CHECK(t->sizes() == key.sizes() && t->scalar_type() == key.scalar_type() && t->device() == key.device(),
                "key, query and values must share shape, dtype and device");
  }
  TORCH_CHECK(mask.scalar_type() == at::kBool && mask.device() == key.device() &&
                  mask.sizes() == at::IntArrayRef({key.size(0), key.size(1), key.size(1)}),
              "the mask must be a bool (B, n, n) tensor for (B, n, d) inputs, not ", mask.scalar_type(), " ",
              mask.sizes());
  TORCH_CHECK(std::isfinite(c) && c > 0, "c must be finite and > 0, not ", c);
}

}  // namespace

// Returns s, 1 / z, and for the backward op what the kernels read for key and query (A and Q, or
// copies of key and query in the direct variant) with a 0-dim bool tensor saying which: passing
// them on saves the backward op the B n d exps of factorising again.
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> token2token_forward(const Tensor& key_, const Tensor& query_,
                                                                       const Tensor& values_, const Tensor& mask_,
                                                                       double c) {
  check_inputs(key_, query_, values_, mask_, c);
  const Tensor key = key_.contiguous(), query = query_.contiguous(), values = values_.contiguous();
  const Tensor mask = mask_.contiguous();
  Tensor S = at::empty_like(key, at::MemoryFormat::Contiguous), IZ = at::empty_like(S);
  Factors f;
  AT_DISPATCH_FLOATING_TYPES(key.scalar_type(), "token2token_forward", [&] {
    f = factorise<scalar_t>(key, query, c);
    with_variant(f.direct, needs_shift<scalar_t>(c), [&](auto direct, auto shifted) {
      forward_kernel<scalar_t, decltype(direct)::value, decltype(shifted)::value>(
          f.K.data_ptr<scalar_t>(), f.Q.data_ptr<scalar_t>(), values.data_ptr<scalar_t>(), mask.data_ptr<bool>(),
          S.data_ptr<scalar_t>(), IZ.data_ptr<scalar_t>(), key.size(0), key.size(1), key.size(2),
          static_cast<scalar_t>(c));
    });
  });
  // An op's outputs may not alias its inputs, so the direct variant hands on copies.
  Tensor K = f.direct ? f.K.clone() : f.K, Q = f.direct ? f.Q.clone() : f.Q;
  return {S, IZ, K, Q, at::scalar_tensor(f.direct, at::TensorOptions().dtype(at::kBool))};
}

// key_factor, query_factor and direct are the forward op's last three outputs.
std::tuple<Tensor, Tensor, Tensor> token2token_backward(const Tensor& grad_s, const Tensor& key_factor,
                                                        const Tensor& query_factor, const Tensor& is_direct,
                                                        const Tensor& values_, const Tensor& mask_, const Tensor& s_,
                                                        const Tensor& inv_z_, double c) {
  check_inputs(key_factor, query_factor, values_, mask_, c);
  for (const Tensor* t : {&grad_s, &s_, &inv_z_}) {
    TORCH_CHECK(t->sizes() == key_factor.sizes() && t->scalar_type() == key_factor.scalar_type() &&
                    t->device() == key_factor.device(),
                "grad_s, s and inv_z must have the shape, dtype and device of the key factor");
  }
  TORCH_CHECK(is_direct.scalar_type() == at::kBool && is_direct.numel() == 1, "direct must be a bool scalar tensor");
  const Tensor K = key_factor.contiguous(), Q = query_factor.contiguous(), values = values_.contiguous();
  const Tensor mask = mask_.contiguous(), S = s_.contiguous(), IZ = inv_z_.contiguous(), G = grad_s.contiguous();
  Tensor dK = at::empty_like(K, at::MemoryFormat::Contiguous), dQ = at::empty_like(dK), dV = at::empty_like(dK);
  AT_DISPATCH_FLOATING_TYPES(K.scalar_type(), "token2token_backward", [&] {
    with_variant(is_direct.item<bool>(), needs_shift<scalar_t>(c), [&](auto direct, auto shifted) {
      backward_kernel<scalar_t, decltype(direct)::value, decltype(shifted)::value>(
          K.data_ptr<scalar_t>(), Q.data_ptr<scalar_t>(), values.data_ptr<scalar_t>(), mask.data_ptr<bool>(),
          S.data_ptr<scalar_t>(), IZ.data_ptr<scalar_t>(), G.data_ptr<scalar_t>(), dK.data_ptr<scalar_t>(),
          dQ.data_ptr<scalar_t>(), dV.data_ptr<scalar_t>(), K.size(0), K.size(1), K.size(2),
          static_cast<scalar_t>(c));
    });
  });
  return {dK, dQ, dV};
}

TORCH_LIBRARY(disan, m) {
  m.def("token2token_forward(Tensor key, Tensor query, Tensor values, Tensor mask, float c) "
        "-> (Tensor s, Tensor inv_z, Tensor key_factor, Tensor query_factor, Tensor direct)");
  m.def("token2token_backward(Tensor grad_s, Tensor key_factor, Tensor query_factor, Tensor direct, "
        "Tensor values, Tensor mask, Tensor s, Tensor inv_z, float c) "
        "-> (Tensor d_key, Tensor d_query, Tensor d_values)");
}

TORCH_LIBRARY_IMPL(disan, CPU, m) {
  m.impl("token2token_forward", &token2token_forward);
  m.impl("token2token_backward", &token2token_backward);
}
