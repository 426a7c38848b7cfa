// Finite-difference gradient checks (double) of the EVA02 ops: the rotary embedding (its
// backward is the transposed rotation; the class token and v untouched) and the SwiGLU gate.
#include <cmath>

#include "core/check.h"
#include "ops/cpu/eva.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

// A table as timm builds it: sin in [0, D), cos in [D, 2D), each repeated over a pair.
std::vector<double> rope_table(Rng& rng, int64_t rows, int64_t D) {
  std::vector<double> t(size_t(rows * 2 * D));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < D; i += 2) {
      const double a = 3 * rng.normal();
      t[r * 2 * D + i] = t[r * 2 * D + i + 1] = std::sin(a);
      t[r * 2 * D + D + i] = t[r * 2 * D + D + i + 1] = std::cos(a);
    }
  return t;
}

TEST(GradCheck, Rope) {
  Rng rng(61);
  const int64_t B = 2, T = 5, W = 12, H = 2, prefix = 1, D = W / H;
  auto x = randn(rng, B * T * 3 * W), R = randn(rng, B * T * 3 * W);
  const auto tab = rope_table(rng, T - prefix, D);
  std::vector<double> y;
  auto loss = [&] {
    y = x;
    rope_rotate<double>(y.data(), tab.data(), B, T, W, H, prefix, false);
    return dot(y, R);
  };
  loss();
  // The class token and the v part pass through; every rotated pair keeps its length.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < 3 * W; ++c) EXPECT_EQ(y[b * T * 3 * W + c], x[b * T * 3 * W + c]);
  for (int64_t r = 0; r < B * T; ++r)
    for (int64_t c = 2 * W; c < 3 * W; ++c) EXPECT_EQ(y[r * 3 * W + c], x[r * 3 * W + c]);
  for (size_t i = 0; i < x.size(); i += 2) EXPECT_NEAR(std::hypot(y[i], y[i + 1]), std::hypot(x[i], x[i + 1]), 1e-12);
  std::vector<double> dx = R;
  rope_rotate<double>(dx.data(), tab.data(), B, T, W, H, prefix, true);
  expect_grad("rope dqkv", x, dx, loss);
  EXPECT_THROW(rope_rotate<double>(y.data(), tab.data(), B, T, W, 5, prefix, false), Error);  // W % H
  EXPECT_THROW(rope_rotate<double>(y.data(), tab.data(), B, T, 6, 2, prefix, false), Error);  // odd head width
}

TEST(GradCheck, Swiglu) {
  Rng rng(62);
  auto g = randn(rng, 40, 2.0), x = randn(rng, 40), R = randn(rng, 40);
  std::vector<double> y(g.size());
  auto loss = [&] {
    swiglu_forward<double>(y.data(), g.data(), x.data(), int64_t(g.size()));
    return dot(y, R);
  };
  loss();
  EXPECT_NEAR(y[0], g[0] / (1 + std::exp(-g[0])) * x[0], 1e-15);
  std::vector<double> dg(g.size(), 7.0), dx(x.size(), 7.0);  // assigned
  swiglu_backward<double>(dg.data(), dx.data(), R.data(), g.data(), x.data(), int64_t(g.size()));
  expect_grad("swiglu dgate", g, dg, loss);
  expect_grad("swiglu dx", x, dx, loss);
}

}  // namespace
}  // namespace oc::ops::test
