// GELU (exact: x * Phi(x)), the sigmoid-gated activations and the residual add. QuickGELU is
// x * sigmoid(1.702 x); GELU's tanh approximation 0.5 x (1 + tanh(u)) is the same form,
// x * sigmoid(2u) with 2u = x (a + b x^2) (0.5 (1 + tanh(u)) = sigmoid(2u), without the
// cancellation of 1 + tanh(u) for negative x). float runs the AVX2 forms of vec_math.h; double
// uses libm (the gradient-check reference).
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
// GeluTanh: 2u = x (kTanhA + kTanhB x^2), kTanhA = 2 sqrt(2/pi), kTanhB = kTanhA * 0.044715.
constexpr double kTanhA = 1.5957691216057307, kTanhB = kTanhA * 0.044715;

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

// The sigmoid gates: z(x) and dz/dx (QuickGelu and GeluTanh).
double gate_f64(double x, Act act, double* dz) {
  if (act == Act::QuickGelu) return *dz = kQuick, kQuick * x;
  *dz = kTanhA + 3 * kTanhB * x * x;
  return x * (kTanhA + kTanhB * x * x);
}

void forward_f64(double* out, const double* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    double dz;
    out[i] = act == Act::Gelu ? x * phi(x) : x / (1.0 + std::exp(-gate_f64(x, act, &dz)));
  }
}

void backward_f64(double* dinp, const double* dout, const double* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = inp[i];
    double g;
    if (act == Act::Gelu) {
      g = phi(x) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x);
    } else {
      double dz;
      const double s = 1.0 / (1.0 + std::exp(-gate_f64(x, act, &dz)));
      g = s + dz * x * s * (1.0 - s);
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

inline V8 sigmoid8(V8 z, V8* e_out = nullptr) {  // sigmoid(z); e = exp(-z)
  V8 e = exp8(_mm256_xor_ps(z, v8(-0.0f)));
  if (e_out) *e_out = e;
  return _mm256_div_ps(v8(1.0f), _mm256_add_ps(v8(1.0f), e));
}

// The sigmoid gate's argument z(x) and, when asked, dz/dx (as gate_f64).
inline V8 gate8(V8 x, Act act, V8* dz = nullptr) {
  if (act == Act::QuickGelu) {
    if (dz) *dz = v8(float(kQuick));
    return _mm256_mul_ps(x, v8(float(kQuick)));
  }
  const V8 x2 = _mm256_mul_ps(x, x);
  if (dz) *dz = _mm256_fmadd_ps(v8(float(3 * kTanhB)), x2, v8(float(kTanhA)));
  return _mm256_mul_ps(x, _mm256_fmadd_ps(v8(float(kTanhB)), x2, v8(float(kTanhA))));
}

void forward_f32(float* out, const float* inp, int64_t n, Act act) {
  if (act == Act::Gelu)
    map8(out, inp, n, [](V8 x) { return _mm256_mul_ps(x, phi8(x)); });
  else
    map8(out, inp, n, [act](V8 x) { return _mm256_mul_ps(x, sigmoid8(gate8(x, act))); });
}

// val = act(x), der = act'(x) (either may be null), sharing phi8 / the sigmoid.
inline void value_and_derivative8(V8 x, Act act, V8* val, V8* der) {
  if (act == Act::Gelu) {
    V8 pdf;
    const V8 cdf = phi8(x, &pdf);
    if (val) *val = _mm256_mul_ps(x, cdf);
    if (der) *der = _mm256_fmadd_ps(x, pdf, cdf);
  } else {
    V8 e, dz;
    const V8 s = sigmoid8(gate8(x, act, &dz), &e);
    if (val) *val = _mm256_mul_ps(x, s);
    const V8 ds = _mm256_mul_ps(e, _mm256_mul_ps(s, s));  // s (1 - s) without the cancellation of 1 - s
    if (der) *der = _mm256_fmadd_ps(_mm256_mul_ps(dz, x), ds, s);
  }
}

// g = act'(x), written into out; the caller multiplies by dout.
void derivative_f32(float* out, const float* inp, int64_t n, Act act) {
  map8(out, inp, n, [act](V8 x) {
    V8 d;
    value_and_derivative8(x, act, nullptr, &d);
    return d;
  });
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
    const double xd = inp[i];
    double v;
    forward_f64(&v, &xd, 1, act);
    out[i] = float(v);
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
