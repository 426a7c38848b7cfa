// Finite-difference gradient checks (double) of the tower-option ops: LayerScale, the mean
// over patch tokens (pool_type avg) and the token gather of patch dropout.
#include "core/check.h"
#include "ops/cpu/tokens.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

TEST(GradCheck, LayerScale) {
  // loss = <R, gamma * o>: d gamma and d o, with the in-place o -> gamma * dy buffer.
  Rng rng(31);
  const int64_t N = 7, C = 70;  // C > 64: two column blocks of the dgamma reduction
  auto o = randn(rng, N * C), gamma = randn(rng, C), R = randn(rng, N * C);
  auto loss = [&] {
    std::vector<double> y = o;
    layer_scale_forward<double>(y.data(), gamma.data(), N, C);
    return dot(y, R);
  };
  std::vector<double> dgamma(C, 0.25), buf = o;  // dgamma accumulates onto 0.25
  layer_scale_backward<double>(dgamma.data(), buf.data(), R.data(), gamma.data(), N, C);
  for (double& g : dgamma) g -= 0.25;
  expect_grad("layer_scale dgamma", gamma, dgamma, loss);
  expect_grad("layer_scale do", o, buf, loss);
}

TEST(GradCheck, MeanTokens) {
  Rng rng(32);
  const int64_t B = 3, Tn = 5, C = 4;
  auto x = randn(rng, B * Tn * C), R = randn(rng, B * C);
  std::vector<double> out(B * C);
  auto loss = [&] {
    mean_tokens_forward<double>(out.data(), x.data(), B, Tn, 1, C);
    return dot(out, R);
  };
  loss();
  // The class token (t = 0) is not averaged: its value must not matter.
  for (int64_t b = 0; b < B; ++b) EXPECT_NEAR(out[b * C], (x[(b * Tn + 1) * C] + x[(b * Tn + 2) * C] + x[(b * Tn + 3) * C] + x[(b * Tn + 4) * C]) / 4, 1e-12);
  std::vector<double> dx(x.size(), 0.0);
  mean_tokens_backward<double>(dx.data(), R.data(), B, Tn, 1, C);
  expect_grad("mean_tokens dx", x, dx, loss);
}

TEST(GradCheck, GatherTokens) {
  Rng rng(33);
  const int64_t B = 2, Tn = 6, K = 4, C = 3;
  const std::vector<int32_t> idx = {0, 5, 2, 3, 0, 1, 4, 2};  // the class token first, then kept patches
  auto x = randn(rng, B * Tn * C), R = randn(rng, B * K * C);
  std::vector<double> out(B * K * C);
  auto loss = [&] {
    gather_tokens_forward<double>(out.data(), x.data(), idx.data(), B, Tn, K, C);
    return dot(out, R);
  };
  loss();
  EXPECT_EQ(out[(1 * K + 2) * C + 1], x[(1 * Tn + 4) * C + 1]);
  std::vector<double> dx(x.size(), 0.0);
  gather_tokens_backward<double>(dx.data(), R.data(), idx.data(), B, Tn, K, C);
  expect_grad("gather_tokens dx", x, dx, loss);
  const std::vector<int32_t> bad = {0, 6, 1, 2, 0, 1, 2, 3};
  EXPECT_THROW(gather_tokens_forward<double>(out.data(), x.data(), bad.data(), B, Tn, K, C), Error);
}

}  // namespace
}  // namespace oc::ops::test
