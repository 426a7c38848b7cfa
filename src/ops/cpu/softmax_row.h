// The row softmax of the attention kernels (attention.cpp, cross_attention.cpp), forward and
// backward, with the score scale folded in; templates for float (exp by vec_math's
// exp_array) and double (std::exp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "ops/cpu/vec_math.h"

namespace oc::ops::cpu {

// row[0..n) = softmax(scale * row[0..n)), row[n..Tn) = 0.
template <typename T>
inline void softmax_row(T* row, int64_t n, int64_t Tn, T scale) {
  T mx = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, row[j]);
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) row[j] = scale * (row[j] - mx);
  if constexpr (std::is_same_v<T, float>) {
    exp_array(row, row, n);
  } else {
    for (int64_t j = 0; j < n; ++j) row[j] = std::exp(row[j]);
  }
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += row[j];
  const T inv = T(1) / sum;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
  for (int64_t j = n; j < Tn; ++j) row[j] = 0;
}

// Softmax backward on one row, with the score scale folded in:
// ds = scale * p * (ds - rowsum(ds * p)) (ds holds dP on entry). Masked entries have p = 0,
// so their dS is 0 without a branch.
template <typename T>
inline void softmax_backward_row(T* ds, const T* p, int64_t Tn, T scale) {
  T dot = 0;
#pragma omp simd reduction(+ : dot)
  for (int64_t j = 0; j < Tn; ++j) dot += ds[j] * p[j];
#pragma omp simd
  for (int64_t j = 0; j < Tn; ++j) ds[j] = scale * p[j] * (ds[j] - dot);
}

}  // namespace oc::ops::cpu
