// AdamW against torch.optim.AdamW's formula computed by hand in double, and the gradient
// norm helpers (sum_squares, scale_inplace, all_finite).
#include <cmath>
#include <limits>

#include "core/check.h"
#include "ops/cpu/adamw.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

TEST(AdamW, MatchesTorchFormulaOverSteps) {
  const int64_t n = 1003;  // not a multiple of the vector width
  const float lr = 5e-4f, b1 = 0.9f, b2 = 0.98f, eps = 1e-6f, wd = 0.2f;
  Rng rng(41);
  std::vector<float> p(n), m(n, 0.0f), v(n, 0.0f);
  for (auto& x : p) x = float(rng.normal());
  std::vector<double> pd(p.begin(), p.end()), md(n, 0.0), vd(n, 0.0);
  for (int64_t step = 1; step <= 5; ++step) {
    std::vector<float> g(n);
    for (auto& x : g) x = float(rng.normal() * 0.1);
    g[0] = 0.0f;  // a zero gradient: only the decay moves it
    adamw_step(p.data(), g.data(), m.data(), v.data(), n, lr, b1, b2, eps, wd, step);
    // torch/optim/adamw.py, _single_tensor_adamw:
    const double bc1 = 1 - std::pow(double(b1), double(step)), bc2 = 1 - std::pow(double(b2), double(step));
    for (int64_t i = 0; i < n; ++i) {
      pd[i] *= 1 - double(lr) * double(wd);
      md[i] = double(b1) * md[i] + (1 - double(b1)) * g[i];
      vd[i] = double(b2) * vd[i] + (1 - double(b2)) * double(g[i]) * g[i];
      pd[i] -= double(lr) / bc1 * md[i] / (std::sqrt(vd[i]) / std::sqrt(bc2) + double(eps));
    }
  }
  // The float run rounds each of ~10 operations per step: relative 1e-6 (~8 ulp) on p, and
  // for m, v an absolute floor of ~5 ulp of their terms where the running sums cancel (m's
  // terms are up to ~0.03, ulp 1.9e-9; v's up to ~1e-3, ulp 1.2e-10).
  EXPECT_LE(max_scaled_err(p, pd, 1e-9, 1e-6), 1.0);
  EXPECT_LE(max_scaled_err(m, md, 1e-8, 1e-6), 1.0);
  EXPECT_LE(max_scaled_err(v, vd, 6e-10, 1e-6), 1.0);
  EXPECT_EQ(m[0], 0.0f);
}

TEST(AdamW, SpansPassEqualsPerTensorSteps) {
  // Three tensors of one arena (one large enough to be cut into chunks, padding between
  // them untouched), two with decay: one pass must give bitwise what adamw_step gives per
  // tensor, and leave the padding alone.
  const std::vector<AdamWSpan> spans = {{0, 5, 0.0f}, {16, 40000, 0.2f}, {40016, 777, 0.1f}};
  const int64_t total = 40016 + 777 + 9;
  Rng rng(42);
  std::vector<float> p(total), g(total), m(total), v(total);
  for (auto* vec : {&p, &g, &m, &v})
    for (auto& x : *vec) x = float(std::abs(rng.normal()));
  auto p2 = p, m2 = m, v2 = v;
  adamw_step_spans(p.data(), g.data(), m.data(), v.data(), spans, 1e-3f, 0.9f, 0.98f, 1e-6f, 3);
  for (const AdamWSpan& s : spans)
    adamw_step(p2.data() + s.offset, g.data() + s.offset, m2.data() + s.offset, v2.data() + s.offset, s.n, 1e-3f, 0.9f,
               0.98f, 1e-6f, s.wd, 3);
  EXPECT_EQ(p, p2);
  EXPECT_EQ(m, m2);
  EXPECT_EQ(v, v2);
  Rng again(42);
  std::vector<float> p0(total);
  for (auto& x : p0) x = float(std::abs(again.normal()));
  for (int64_t i = 5; i < 16; ++i) EXPECT_EQ(p[size_t(i)], p0[size_t(i)]) << "padding " << i;
}

TEST(AdamW, FirstStepIsSignedLearningRate) {
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * g / (|g| + eps) ~ lr * sign(g).
  std::vector<float> p = {1.0f, 1.0f}, g = {3.0f, -0.5f}, m(2, 0.0f), v(2, 0.0f);
  adamw_step(p.data(), g.data(), m.data(), v.data(), 2, 0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, 1);
  EXPECT_NEAR(p[0], 0.99f, 1e-6);
  EXPECT_NEAR(p[1], 1.01f, 1e-6);
  EXPECT_THROW(adamw_step(p.data(), g.data(), m.data(), v.data(), 2, 0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, 0), Error);
}

TEST(GradNorm, SumSquaresScaleAllFinite) {
  const int64_t n = 100003;  // large enough to run threaded
  Rng rng(42);
  std::vector<float> x(n);
  for (auto& e : x) e = float(rng.normal());
  double ref = 0;
  for (float e : x) ref += double(e) * e;
  const double s = sum_squares(x.data(), n);
  EXPECT_NEAR(s, ref, 1e-12 * ref);  // double sums of 1e5 positive terms: ~1e-16 * 1e5 relative
  EXPECT_EQ(sum_squares(x.data(), n), s);  // same threads, same order: bitwise

  std::vector<float> y = x;
  scale_inplace(y.data(), n, 0.5f);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], x[i] * 0.5f);

  EXPECT_TRUE(all_finite(x.data(), n));
  for (int64_t at : {int64_t(0), n / 2, n - 1}) {  // head, middle, vector tail
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                      -std::numeric_limits<float>::infinity()}) {
      std::vector<float> z = x;
      z[at] = bad;
      EXPECT_FALSE(all_finite(z.data(), n)) << "at " << at;
    }
  }
  EXPECT_TRUE(all_finite(x.data(), 0));
  EXPECT_EQ(sum_squares(x.data(), 0), 0.0);
}

}  // namespace
}  // namespace oc::ops::test
