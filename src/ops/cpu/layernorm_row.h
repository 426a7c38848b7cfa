// One LayerNorm row, shared by layernorm_forward and the fused bf16 passes (bf16_ops.cpp),
// so that the bf16 output is exactly the fp32 op's output rounded.
#pragma once
#include <cmath>
#include <cstdint>

namespace oc::ops::cpu {

// y[C] = (x - mean) * rstd * w + b; *mean and *rstd saved for backward.
template <typename T>
inline void layernorm_row(T* y, T* mean, T* rstd, const T* x, const T* w, const T* b, int64_t C, double eps) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t c = 0; c < C; ++c) sum += x[c];
  const T m = sum / T(C);
  T ss = 0;
#pragma omp simd reduction(+ : ss)
  for (int64_t c = 0; c < C; ++c) ss += (x[c] - m) * (x[c] - m);
  const T rs = T(1) / std::sqrt(ss / T(C) + T(eps));
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - m) * rs * w[c] + b[c];
  *mean = m;
  *rstd = rs;
}

}  // namespace oc::ops::cpu
