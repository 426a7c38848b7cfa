// Vectorized exp and normal CDF for the float kernels (GELU, QuickGELU, softmax). Without
// -ffast-math GCC never vectorizes std::exp/std::erf, which would leave GELU on 20M
// elements per layer running one scalar libm call at a time.
//   exp:  Cephes expf (range reduction by ln2, degree-6 polynomial), ~1 ulp on [-87, 88];
//         below -87.3 it returns exactly 0 (so exp(-inf) = 0 as softmax needs).
//   Phi:  the standard normal CDF through erfc's Chebyshev fit from Numerical Recipes
//         (erfcc), fractional error < 1.2e-7 everywhere, so GELU keeps float relative
//         accuracy on both tails (no 1 + erf cancellation for negative inputs).
//   phi:  the standard normal density (GELU's derivative), from the same exp as Phi.
// Each has an 8-wide AVX2 form and an array form that runs the tail through the same code,
// so every element gets the same arithmetic wherever it sits in the array.
#pragma once
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define OC_VEC_AVX2 1
#endif

namespace oc::ops::cpu {

// Cephes expf's constants, shared by exp8 here and exp16 (attention_bf16_avx512.cpp): clamp
// range, log2(e), ln2 split in two for an exact n * ln2, and the polynomial from the highest
// coefficient down (evaluated by Horner's rule after r + r^2 * p).
struct ExpfConst {
  static constexpr float kMin = -87.3f, kMax = 88.0f, kLog2e = 1.44269504088896341f;
  static constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  static constexpr float kPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                     4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
};

#ifdef OC_VEC_AVX2
using V8 = __m256;

inline V8 v8(float x) { return _mm256_set1_ps(x); }

inline V8 exp8(V8 x) {
  using E = ExpfConst;
  const V8 too_small = _mm256_cmp_ps(x, v8(E::kMin), _CMP_LT_OQ);
  x = _mm256_min_ps(v8(E::kMax), _mm256_max_ps(v8(E::kMin), x));  // operand order keeps NaN
  V8 n = _mm256_round_ps(_mm256_mul_ps(x, v8(E::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  V8 r = _mm256_fnmadd_ps(n, v8(E::kLn2Hi), x);  // ln2 split in two for an exact product
  r = _mm256_fnmadd_ps(n, v8(E::kLn2Lo), r);
  V8 p = v8(E::kPoly[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, v8(E::kPoly[i]));
  V8 y = _mm256_fmadd_ps(_mm256_mul_ps(p, r), r, _mm256_add_ps(r, v8(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(too_small, y);
}

// x^2 / 2 as an unevaluated sum hi + lo (exact: x/2 is exact and the FMA recovers the
// product's rounding error). exp(-x^2/2) has relative condition x^2/2, so rounding x^2 first
// would cost up to 5e-6 relative at |x| = 12; with hi + lo the tails keep float accuracy.
inline void half_square8(V8 x, V8& hi, V8& lo) {
  const V8 hx = _mm256_mul_ps(v8(0.5f), x);
  hi = _mm256_mul_ps(hx, x);
  lo = _mm256_fmsub_ps(hx, x, hi);
}

// Phi(x) = P(N(0,1) <= x) = erfc(-x/sqrt2)/2 with erfc(a) = t exp(-a^2 + p(t)) (Numerical
// Recipes erfcc, t = 1/(1 + a/2)). The polynomial only sees t (well conditioned); -a^2 comes
// exactly from x (half_square8). Two exps instead of one: exp(p - a^2) as a single argument
// would round p - a^2 and lose the accuracy half_square8 kept. (Only bit operations and
// explicit FMAs touch hi/lo, so -ffp-contract cannot fuse them differently.)
// With pdf non-null it also returns the density phi(x) = exp(-x^2/2) / sqrt(2 pi), which
// shares exp(-hi): GELU's derivative Phi(x) + x phi(x) costs two exps, not three.
inline V8 phi8(V8 x, V8* pdf = nullptr) {
  const V8 a = _mm256_mul_ps(_mm256_andnot_ps(v8(-0.0f), x), v8(0.70710678118654752f));
  const V8 t = _mm256_div_ps(v8(1.0f), _mm256_fmadd_ps(v8(0.5f), a, v8(1.0f)));
  V8 p = v8(0.17087277f);
  p = _mm256_fmadd_ps(p, t, v8(-0.82215223f));
  p = _mm256_fmadd_ps(p, t, v8(1.48851587f));
  p = _mm256_fmadd_ps(p, t, v8(-1.13520398f));
  p = _mm256_fmadd_ps(p, t, v8(0.27886807f));
  p = _mm256_fmadd_ps(p, t, v8(-0.18628806f));
  p = _mm256_fmadd_ps(p, t, v8(0.09678418f));
  p = _mm256_fmadd_ps(p, t, v8(0.37409196f));
  p = _mm256_fmadd_ps(p, t, v8(1.00002368f));
  p = _mm256_fmadd_ps(p, t, v8(-1.26551223f));
  V8 hi, lo;
  half_square8(x, hi, lo);
  // t exp(p - hi - lo) = t exp(-hi) exp(p - lo): -hi is exact (a sign flip), p - lo is O(1).
  const V8 e_hi = exp8(_mm256_xor_ps(hi, v8(-0.0f)));
  const V8 half_erfc = _mm256_mul_ps(_mm256_mul_ps(v8(0.5f), t), _mm256_mul_ps(e_hi, exp8(_mm256_sub_ps(p, lo))));
  if (pdf) *pdf = _mm256_mul_ps(v8(0.39894228040143267794f), _mm256_fnmadd_ps(e_hi, lo, e_hi));  // e^-lo = 1 - lo
  const V8 neg = _mm256_cmp_ps(x, v8(0.0f), _CMP_LT_OQ);
  return _mm256_blendv_ps(_mm256_sub_ps(v8(1.0f), half_erfc), half_erfc, neg);
}

// Applies f (V8 -> V8) to n floats; the tail goes through a padded 8-wide block.
template <class F>
inline void map8(float* out, const float* in, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(in + i)));
  if (i < n) {
    alignas(32) float buf[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int64_t j = i; j < n; ++j) buf[j - i] = in[j];
    _mm256_store_ps(buf, f(_mm256_load_ps(buf)));
    for (int64_t j = i; j < n; ++j) out[j] = buf[j - i];
  }
}
#endif

// exp over an array (out may alias in).
inline void exp_array(float* out, const float* in, int64_t n) {
#ifdef OC_VEC_AVX2
  map8(out, in, n, [](V8 x) { return exp8(x); });
#else
  for (int64_t i = 0; i < n; ++i) out[i] = std::exp(in[i]);
#endif
}

}  // namespace oc::ops::cpu
