// EVA02's rotary embedding and SwiGLU gate on the CPU. The rotation is a few multiplies per
// pair, threaded over tokens; the gate's sigmoid runs the AVX2 exp of vec_math.h for float
// (double, the gradient-check reference, uses libm).
#include "ops/cpu/eva.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/check.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/vec_math.h"

namespace oc::ops {

template <typename T>
void rope_rotate(T* qkv, const T* sincos, int64_t B, int64_t Tn, int64_t W, int64_t H, int64_t prefix, bool inverse) {
  OC_CHECK(H > 0 && W % H == 0 && (W / H) % 2 == 0 && prefix >= 0 && prefix <= Tn,
           "rope: bad shape W={} H={} T={} prefix={}", W, H, Tn, prefix);
  const int64_t D = W / H, rows = B * (Tn - prefix);
  const T sign = inverse ? T(-1) : T(1);
#pragma omp parallel for schedule(static) if (rows * W > (1 << 15))
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t b = r / (Tn - prefix), t = prefix + r % (Tn - prefix);
    const T* sn = sincos + (t - prefix) * 2 * D;
    const T* cs = sn + D;
    T* row = qkv + (b * Tn + t) * 3 * W;
    for (int64_t h = 0; h < 2 * H; ++h) {  // the H heads of q, then those of k
      T* x = row + h * D;
#pragma omp simd
      for (int64_t i = 0; i < D; i += 2) {
        const T s = sign * sn[i], c = cs[i], x0 = x[i], x1 = x[i + 1];
        x[i] = x0 * c - x1 * s;
        x[i + 1] = x1 * c + x0 * s;
      }
    }
  }
}

namespace {

constexpr int64_t kChunk = 1 << 14;  // elements per parallel chunk

template <class F>
void chunked(int64_t n, F f) {
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (nchunks > 1)
  for (int64_t c = 0; c < nchunks; ++c) f(c * kChunk, std::min(kChunk, n - c * kChunk));
}

template <typename T>
T sigmoid(T g) {
  return T(1) / (T(1) + std::exp(-g));
}

#ifdef OC_VEC_AVX2
using cpu::exp8;
using cpu::V8;
using cpu::v8;
inline V8 sigmoid8(V8 g) { return _mm256_div_ps(v8(1.0f), _mm256_add_ps(v8(1.0f), exp8(_mm256_sub_ps(v8(0.0f), g)))); }
#endif

// Elements [b, b + m) of the gate, 8 at a time where AVX2 is built; the rest scalar.
template <typename T>
void swiglu_fwd_span(T* out, const T* gate, const T* x, int64_t b, int64_t m) {
  int64_t i = b;
#ifdef OC_VEC_AVX2
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= b + m; i += 8) {
      const V8 g = _mm256_loadu_ps(gate + i);
      _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(g, sigmoid8(g)), _mm256_loadu_ps(x + i)));
    }
  }
#endif
  for (; i < b + m; ++i) out[i] = gate[i] * sigmoid(gate[i]) * x[i];
}

template <typename T>
void swiglu_bwd_span(T* dgate, T* dx, const T* dout, const T* gate, const T* x, int64_t b, int64_t m) {
  int64_t i = b;
#ifdef OC_VEC_AVX2
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= b + m; i += 8) {
      const V8 g = _mm256_loadu_ps(gate + i), d = _mm256_loadu_ps(dout + i), s = sigmoid8(g);
      const V8 ds = _mm256_fmadd_ps(g, _mm256_sub_ps(v8(1.0f), s), v8(1.0f));  // 1 + g (1 - s)
      const V8 xs = _mm256_mul_ps(d, _mm256_loadu_ps(x + i));
      _mm256_storeu_ps(dx + i, _mm256_mul_ps(d, _mm256_mul_ps(g, s)));
      _mm256_storeu_ps(dgate + i, _mm256_mul_ps(xs, _mm256_mul_ps(s, ds)));
    }
  }
#endif
  for (; i < b + m; ++i) {
    const T g = gate[i], d = dout[i], s = sigmoid(g), xi = x[i];
    dx[i] = d * g * s;
    dgate[i] = d * xi * s * (T(1) + g * (T(1) - s));
  }
}

}  // namespace

template <typename T>
void swiglu_forward(T* out, const T* gate, const T* x, int64_t n) {
  chunked(n, [&](int64_t b, int64_t m) { swiglu_fwd_span(out, gate, x, b, m); });
}

template <typename T>
void swiglu_backward(T* dgate, T* dx, const T* dout, const T* gate, const T* x, int64_t n) {
  chunked(n, [&](int64_t b, int64_t m) { swiglu_bwd_span(dgate, dx, dout, gate, x, b, m); });
}

#define OC_INSTANTIATE(T)                                                                        \
  template void rope_rotate<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t, bool); \
  template void swiglu_forward<T>(T*, const T*, const T*, int64_t);                              \
  template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const RopeForwardArgs& a) { ops::rope_rotate(a.qkv, a.sincos, a.B, a.T, a.W, a.H, a.prefix, false); }
void run(const RopeBackwardArgs& a) { ops::rope_rotate(a.dqkv, a.sincos, a.B, a.T, a.W, a.H, a.prefix, true); }
void run(const SwigluForwardArgs& a) { ops::swiglu_forward(a.out, a.gate, a.x, a.n); }
void run(const SwigluBackwardArgs& a) { ops::swiglu_backward(a.dgate, a.dx, a.dout, a.gate, a.x, a.n); }
}  // namespace oc::ops::cpu
