// GELU (exact: x * Phi(x)), QuickGELU (x * sigmoid(1.702 x)) and the residual add.
// float runs the AVX2 forms of vec_math.h; double uses libm (the gradient-check reference).
#include "ops/cpu/activation.h"
#include "ops/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/cpu/act_internal.h"
#include "ops/cpu/vec_math.h"

namespace oc::ops {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)
constexpr double kQuick = 1.702;

// Elements per parallel chunk: large enough that the fork costs nothing next to the work.
constexpr int64_t kChunk = 1 << 14;

// Runs f(begin, count) over [0, n) in chunks, threaded when n is large.
template <class F>
void chunked(int64_t n, F f) {
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (nchunks > 1)
  for (int64_t c = 0; c < nchunks; ++c) {
    const int64_t b = c * kChunk;
    f(b, std::min(kChunk, n - b));
  }
}

double phi(double x) { return 0.5 * std::erfc(-x * kInvSqrt2); }

void forward_f64(double* out, const double* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    out[i] = act == Act::Gelu ? x * phi(x) : x / (1.0 + std::exp(-kQuick * x));
  }
}

void backward_f64(double* dinp, const double* dout, const double* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    double g;
    if (act == Act::Gelu) {
      g = phi(x) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
    } else {
      const double s = 1.0 / (1.0 + std::exp(-kQuick * x));
      g = s + kQuick * x * s * (1.0 - s);
    }
    dinp[i] = dout[i] * g;
  }
}

#ifdef OC_VEC_AVX2
using cpu::exp8;
using cpu::map8;
using cpu::phi8;
using cpu::V8;
using cpu::v8;

inline V8 sigmoid_quick8(V8 x, V8* e_out = nullptr) {  // sigmoid(1.702 x); e = exp(-1.702 x)
  V8 e = exp8(_mm256_mul_ps(x, v8(float(-kQuick))));
  if (e_out) *e_out = e;
  return _mm256_div_ps(v8(1.0f), _mm256_add_ps(v8(1.0f), e));
}

void forward_f32(float* out, const float* inp, int64_t n, Act act) {
  if (act == Act::Gelu)
    map8(out, inp, n, [](V8 x) { return _mm256_mul_ps(x, phi8(x)); });
  else
    map8(out, inp, n, [](V8 x) { return _mm256_mul_ps(x, sigmoid_quick8(x)); });
}

// g = act'(x), written into out; the caller multiplies by dout.
void derivative_f32(float* out, const float* inp, int64_t n, Act act) {
  if (act == Act::Gelu) {
    map8(out, inp, n, [](V8 x) {
      V8 pdf;
      const V8 cdf = phi8(x, &pdf);
      return _mm256_fmadd_ps(x, pdf, cdf);
    });
  } else {
    map8(out, inp, n, [](V8 x) {
      V8 e;
      V8 s = sigmoid_quick8(x, &e);
      V8 ds = _mm256_mul_ps(e, _mm256_mul_ps(s, s));  // s (1 - s) without the cancellation of 1 - s
      return _mm256_fmadd_ps(_mm256_mul_ps(v8(float(kQuick)), x), ds, s);
    });
  }
}

void backward_f32(float* dinp, const float* dout, const float* inp, int64_t n, Act act) {
  // dinp may alias dout, so the derivative goes to a stack block first.
  constexpr int64_t kBlk = 256;
  alignas(32) float g[kBlk];
  for (int64_t b = 0; b < n; b += kBlk) {
    const int64_t m = std::min(kBlk, n - b);
    derivative_f32(g, inp + b, m, act);
#pragma omp simd
    for (int64_t i = 0; i < m; ++i) dinp[b + i] = dout[b + i] * g[i];
  }
}
// val = act(x), der = act'(x): the expressions of forward_f32 and derivative_f32, sharing
// phi8 / the sigmoid (whose value does not depend on whether the pdf is asked for).
inline void value_and_derivative8(V8 x, Act act, V8* val, V8* der) {
  if (act == Act::Gelu) {
    V8 pdf;
    const V8 cdf = phi8(x, &pdf);
    *val = _mm256_mul_ps(x, cdf);
    *der = _mm256_fmadd_ps(x, pdf, cdf);
  } else {
    V8 e;
    V8 s = sigmoid_quick8(x, &e);
    *val = _mm256_mul_ps(x, s);
    V8 ds = _mm256_mul_ps(e, _mm256_mul_ps(s, s));
    *der = _mm256_fmadd_ps(_mm256_mul_ps(v8(float(kQuick)), x), ds, s);
  }
}

void value_and_grad_f32(float* out, float* dinp, const float* dout, const float* inp, int64_t n, Act act) {
  int64_t i = 0;
  V8 v, d;
  for (; i + 8 <= n; i += 8) {
    value_and_derivative8(_mm256_loadu_ps(inp + i), act, &v, &d);
    _mm256_storeu_ps(out + i, v);
    _mm256_storeu_ps(dinp + i, _mm256_mul_ps(_mm256_loadu_ps(dout + i), d));
  }
  if (i < n) {
    alignas(32) float x[8] = {0, 0, 0, 0, 0, 0, 0, 0}, vb[8], db[8];
    for (int64_t j = i; j < n; ++j) x[j - i] = inp[j];
    value_and_derivative8(_mm256_load_ps(x), act, &v, &d);
    _mm256_store_ps(vb, v), _mm256_store_ps(db, d);
    for (int64_t j = i; j < n; ++j) out[j] = vb[j - i], dinp[j] = dout[j] * db[j - i];
  }
}
#else
void forward_f32(float* out, const float* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = inp[i];
    out[i] = act == Act::Gelu ? float(x * phi(x)) : x / (1.0f + std::exp(float(-kQuick) * x));
  }
}
void backward_f32(float* dinp, const float* dout, const float* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = inp[i], one = 1.0;
    double g;
    backward_f64(&g, &one, &x, 1, act);
    dinp[i] = dout[i] * float(g);
  }
}
void value_and_grad_f32(float* out, float* dinp, const float* dout, const float* inp, int64_t n, Act act) {
  backward_f32(dinp, dout, inp, n, act);
  forward_f32(out, inp, n, act);
}
#endif

}  // namespace

void cpu::act_value_and_grad_f32(float* out, float* dinp, const float* dout, const float* inp, int64_t n, Act act) {
  value_and_grad_f32(out, dinp, dout, inp, n, act);
}

template <typename T>
void act_forward(T* out, const T* inp, int64_t n, Act act) {
  chunked(n, [&](int64_t b, int64_t m) {
    if constexpr (std::is_same_v<T, float>)
      forward_f32(out + b, inp + b, m, act);
    else
      forward_f64(out + b, inp + b, m, act);
  });
}

template <typename T>
void act_backward(T* dinp, const T* dout, const T* inp, int64_t n, Act act) {
  chunked(n, [&](int64_t b, int64_t m) {
    if constexpr (std::is_same_v<T, float>)
      backward_f32(dinp + b, dout + b, inp + b, m, act);
    else
      backward_f64(dinp + b, dout + b, inp + b, m, act);
  });
}

template <typename T>
void add_inplace(T* y, const T* x, int64_t n) {
  chunked(n, [&](int64_t b, int64_t m) {
#pragma omp simd
    for (int64_t i = b; i < b + m; ++i) y[i] += x[i];
  });
}

#define OC_INSTANTIATE(T)                                                      \
  template void act_forward<T>(T*, const T*, int64_t, Act);                    \
  template void act_backward<T>(T*, const T*, const T*, int64_t, Act);         \
  template void add_inplace<T>(T*, const T*, int64_t);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const ActForwardArgs& a) { ops::act_forward(a.out, a.inp, a.n, a.act); }
void run(const ActBackwardArgs& a) { ops::act_backward(a.dinp, a.dout, a.inp, a.n, a.act); }
void run(const AddInplaceArgs& a) { ops::add_inplace(a.y, a.x, a.n); }
}  // namespace oc::ops::cpu
