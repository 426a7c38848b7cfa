#include "model/act_ranges.h"

#include <algorithm>
#include <cmath>

namespace oc {

namespace {
thread_local ActRanges* t_ranges = nullptr;
}  // namespace

void ActRanges::observe(const float* weight, const float* x, int64_t n) {
  float m = 0.0f;
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));  // max(m, NaN) keeps m
  float& a = amax_[weight];
  a = std::max(a, m);
}

ActRanges::Scope::Scope(ActRanges& r) : prev_(t_ranges) { t_ranges = &r; }
ActRanges::Scope::~Scope() { t_ranges = prev_; }

void observe_gemm_input(const float* weight, const float* x, int64_t n) {
  if (t_ranges) t_ranges->observe(weight, x, n);
}

}  // namespace oc
