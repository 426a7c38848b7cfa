// LayerScale, token mean and token gather. Every reduction is split by output column (dgamma)
// or output row and summed in a fixed order: deterministic for any thread count.
#include "ops/cpu/tokens.h"
#include "ops/cpu/cpu_backend.h"

#include <algorithm>

#include "core/check.h"

namespace oc::ops {

template <typename T>
void layer_scale_forward(T* x, const T* gamma, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    T* row = x + n * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) row[c] *= gamma[c];
  }
}

template <typename T>
void layer_scale_backward(T* dgamma, T* o_dx, const T* dy, const T* gamma, int64_t N, int64_t C) {
  // Columns in blocks of 64 per thread: each dgamma[c] is one thread's sum over n in order.
  const int64_t blocks = (C + 63) / 64;
#pragma omp parallel for schedule(static)
  for (int64_t cb = 0; cb < blocks; ++cb) {
    const int64_t c0 = cb * 64, c1 = std::min(C, c0 + 64);
    T acc[64] = {};
    for (int64_t n = 0; n < N; ++n) {
      T* o = o_dx + n * C;
      const T* g = dy + n * C;
      for (int64_t c = c0; c < c1; ++c) {
        acc[c - c0] += g[c] * o[c];
        o[c] = gamma[c] * g[c];
      }
    }
    for (int64_t c = c0; c < c1; ++c) dgamma[c] += acc[c - c0];
  }
}

template <typename T>
void mean_tokens_forward(T* out, const T* inp, int64_t B, int64_t Tn, int64_t first, int64_t C) {
  OC_CHECK(first >= 0 && first < Tn, "mean_tokens: first token {} outside [0, {})", first, Tn);
  const T inv = T(1) / T(Tn - first);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    T* o = out + b * C;
    std::fill(o, o + C, T(0));
    for (int64_t t = first; t < Tn; ++t) {
      const T* src = inp + (b * Tn + t) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) o[c] += src[c];
    }
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) o[c] *= inv;
  }
}

template <typename T>
void mean_tokens_backward(T* dinp, const T* dout, int64_t B, int64_t Tn, int64_t first, int64_t C) {
  OC_CHECK(first >= 0 && first < Tn, "mean_tokens: first token {} outside [0, {})", first, Tn);
  const T inv = T(1) / T(Tn - first);
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < B * Tn; ++bt) {
    if (bt % Tn < first) continue;
    T* dst = dinp + bt * C;
    const T* g = dout + (bt / Tn) * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) dst[c] += g[c] * inv;
  }
}

namespace {
// Checked before the threaded loops (an exception must not leave an OpenMP region).
void check_indices(const int32_t* idx, int64_t B, int64_t Tn, int64_t K) {
  for (int64_t bk = 0; bk < B * K; ++bk)
    OC_CHECK(idx[bk] >= 0 && idx[bk] < Tn, "gather_tokens: index {} of row {} outside [0, {})", idx[bk], bk / K, Tn);
}
}  // namespace

template <typename T>
void gather_tokens_forward(T* out, const T* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C) {
  check_indices(idx, B, Tn, K);
#pragma omp parallel for schedule(static)
  for (int64_t bk = 0; bk < B * K; ++bk) {
    const T* src = inp + (bk / K * Tn + idx[bk]) * C;
    std::copy(src, src + C, out + bk * C);
  }
}

template <typename T>
void gather_tokens_backward(T* dinp, const T* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C) {
  check_indices(idx, B, Tn, K);
  // One sample per thread: repeated indices within a sample add up in order.
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k) {
      const int32_t i = idx[b * K + k];
      T* dst = dinp + (b * Tn + i) * C;
      const T* g = dout + (b * K + k) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dst[c] += g[c];
    }
}

#define OC_INSTANTIATE(T)                                                                                 \
  template void layer_scale_forward<T>(T*, const T*, int64_t, int64_t);                                   \
  template void layer_scale_backward<T>(T*, T*, const T*, const T*, int64_t, int64_t);                    \
  template void mean_tokens_forward<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t);                 \
  template void mean_tokens_backward<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t);                \
  template void gather_tokens_forward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t, int64_t); \
  template void gather_tokens_backward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t, int64_t);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const LayerScaleForwardArgs& a) { ops::layer_scale_forward(a.x, a.gamma, a.N, a.C); }
void run(const LayerScaleBackwardArgs& a) { ops::layer_scale_backward(a.dgamma, a.o_dx, a.dy, a.gamma, a.N, a.C); }
void run(const MeanTokensForwardArgs& a) { ops::mean_tokens_forward(a.out, a.inp, a.B, a.Tn, a.first, a.C); }
void run(const MeanTokensBackwardArgs& a) { ops::mean_tokens_backward(a.dinp, a.dout, a.B, a.Tn, a.first, a.C); }
void run(const GatherTokensForwardArgs& a) {
  ops::gather_tokens_forward(a.out, a.inp, a.idx.data(), a.B, a.Tn, a.K, a.C);
}
void run(const GatherTokensBackwardArgs& a) {
  ops::gather_tokens_backward(a.dinp, a.dout, a.idx.data(), a.B, a.Tn, a.K, a.C);
}
}  // namespace oc::ops::cpu
