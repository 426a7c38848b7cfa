#include "model/act_ranges.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

namespace oc {

namespace {
thread_local ActRanges* t_ranges = nullptr;
}  // namespace

void ActRanges::observe(const float* weight, const float* x, int64_t n) {
  float m = 0.0f;
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(x[i]));  // max(m, NaN) keeps m
  Seen& s = seen_[weight];
  s.amax = std::max(s.amax, m);
  s.count += n;
  if (tail_ <= 0.0 || n == 0) return;
  const int64_t k = std::min<int64_t>(n, int64_t(std::ceil(2.0 * tail_ * double(n))));
  std::vector<float> a(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) a[size_t(i)] = std::isnan(x[i]) ? 0.0f : std::fabs(x[i]);
  std::nth_element(a.begin(), a.begin() + (k - 1), a.end(), std::greater<float>());
  s.top.insert(s.top.end(), a.begin(), a.begin() + k);
}

std::map<const float*, float> ActRanges::ranges() const {
  std::map<const float*, float> out;
  for (const auto& [w, s] : seen_) {
    float r = s.amax;
    if (tail_ > 0.0 && !s.top.empty()) {
      std::vector<float> t = s.top;
      const size_t k = std::min(t.size(), size_t(std::max<double>(1.0, std::ceil(tail_ * double(s.count)))));
      std::nth_element(t.begin(), t.begin() + long(k - 1), t.end(), std::greater<float>());
      r = t[k - 1];
    }
    out[w] = r;
  }
  return out;
}

ActRanges::Scope::Scope(ActRanges& r) : prev_(t_ranges) { t_ranges = &r; }
ActRanges::Scope::~Scope() { t_ranges = prev_; }

void observe_gemm_input(const float* weight, const float* x, int64_t n) {
  if (t_ranges) t_ranges->observe(weight, x, n);
}

}  // namespace oc
