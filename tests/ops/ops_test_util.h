// Shared helpers of the ops tests: random tensors and the finite-difference gradient check.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/rng.h"

namespace oc::ops::test {

template <typename T = double>
std::vector<T> randn(Rng& rng, int64_t n, double scale = 1.0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = T(rng.normal() * scale);
  return v;
}

template <typename T>
std::vector<T> to(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// Central differences in double with eps = 1e-6. Truncation error is O(eps^2 |f'''|) ~ 1e-12;
// rounding error is ~ 1e-16 * |terms of the loss| / eps ~ 1e-9 for our O(1..100) losses. So
// a correct gradient agrees to ~1e-8, and the 1e-6 tolerance (relative to max(1, |grad|))
// still catches any missing or wrong term, which shows up at O(1e-2) or worse.
constexpr double kFdEps = 1e-6;
constexpr double kFdTol = 1e-6;

// For each element k of x: numeric d loss / d x[k] vs analytic[k]. `loss` must read x.
inline void expect_grad(const std::string& what, std::vector<double>& x, const std::vector<double>& analytic,
                        const std::function<double()>& loss) {
  ASSERT_EQ(x.size(), analytic.size()) << what;
  double worst = 0;
  size_t worst_k = 0;
  double worst_num = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    const double save = x[k];
    x[k] = save + kFdEps;
    const double lp = loss();
    x[k] = save - kFdEps;
    const double lm = loss();
    x[k] = save;
    const double num = (lp - lm) / (2 * kFdEps);
    const double err = std::abs(num - analytic[k]) / std::max({1.0, std::abs(num), std::abs(analytic[k])});
    if (err > worst) worst = err, worst_k = k, worst_num = num;
  }
  EXPECT_LT(worst, kFdTol) << what << ": worst element " << worst_k << " numeric " << worst_num << " analytic "
                           << analytic[worst_k];
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// max |a - b| / (atol + rtol * |b|) over elements; <= 1 means within tolerance.
template <typename A, typename B>
double max_scaled_err(const std::vector<A>& a, const std::vector<B>& b, double atol, double rtol) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::abs(double(a[i]) - double(b[i])) / (atol + rtol * std::abs(double(b[i]))));
  return worst;
}

}  // namespace oc::ops::test
