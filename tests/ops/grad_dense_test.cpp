// Finite-difference gradient checks (double) of linear, proj, layernorm and the activations.
// Each check uses loss = sum(out * R) for a random R, so backward gets dout = R.
#include <gtest/gtest-spi.h>

#include "ops/cpu/activation.h"
#include "ops/cpu/layernorm.h"
#include "ops/cpu/linear.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

TEST(GradCheck, Linear) {
  Rng rng(1);
  const int64_t M = 5, K = 7, N = 4;
  auto inp = randn(rng, M * K), w = randn(rng, N * K), bias = randn(rng, N), R = randn(rng, M * N);
  std::vector<double> out(M * N);
  auto loss = [&] {
    linear_forward<double>(out.data(), inp.data(), w.data(), bias.data(), M, K, N);
    return dot(out, R);
  };
  std::vector<double> dinp(M * K, 123.0), dw(N * K, 0.0), db(N, 0.0);
  linear_backward<double>(dinp.data(), dw.data(), db.data(), R.data(), inp.data(), w.data(), M, K, N);
  expect_grad("linear dinp", inp, dinp, loss);
  expect_grad("linear dweight", w, dw, loss);
  expect_grad("linear dbias", bias, db, loss);

  // Parameter gradients accumulate; dinp is assigned.
  std::vector<double> dinp2(M * K, 7.0), dw2(N * K, 1.0), db2(N, 2.0);
  linear_backward<double>(dinp2.data(), dw2.data(), db2.data(), R.data(), inp.data(), w.data(), M, K, N);
  for (int64_t i = 0; i < N * K; ++i) EXPECT_NEAR(dw2[i], dw[i] + 1.0, 1e-12);
  for (int64_t i = 0; i < N; ++i) EXPECT_NEAR(db2[i], db[i] + 2.0, 1e-12);
  for (int64_t i = 0; i < M * K; ++i) EXPECT_NEAR(dinp2[i], dinp[i], 1e-12);

  // No bias: forward without it, backward skips dbias and dinp when null.
  std::vector<double> out_nb(M * N), dw3(N * K, 0.0);
  loss();  // out as of the unperturbed inputs
  linear_forward<double>(out_nb.data(), inp.data(), w.data(), nullptr, M, K, N);
  for (int64_t i = 0; i < M * N; ++i) EXPECT_NEAR(out_nb[i] + bias[i % N], out[i], 1e-12);
  linear_backward<double>(nullptr, dw3.data(), nullptr, R.data(), inp.data(), w.data(), M, K, N);
  for (int64_t i = 0; i < N * K; ++i) EXPECT_NEAR(dw3[i], dw[i], 1e-12);
}

TEST(GradCheck, Proj) {
  Rng rng(2);
  const int64_t M = 4, K = 6, N = 3;
  auto inp = randn(rng, M * K), w = randn(rng, K * N), R = randn(rng, M * N);
  std::vector<double> out(M * N);
  auto loss = [&] {
    proj_forward<double>(out.data(), inp.data(), w.data(), M, K, N);
    return dot(out, R);
  };
  std::vector<double> dinp(M * K), dw(K * N, 0.0);
  proj_backward<double>(dinp.data(), dw.data(), R.data(), inp.data(), w.data(), M, K, N);
  expect_grad("proj dinp", inp, dinp, loss);
  expect_grad("proj dw", w, dw, loss);
}

TEST(GradCheck, LayerNorm) {
  Rng rng(3);
  const int64_t N = 4, C = 9;
  auto inp = randn(rng, N * C, 2.0), w = randn(rng, C), b = randn(rng, C), R = randn(rng, N * C);
  for (auto& x : inp) x += 0.5;  // a non-zero mean
  std::vector<double> out(N * C), mean(N), rstd(N);
  auto loss = [&] {
    layernorm_forward<double>(out.data(), mean.data(), rstd.data(), inp.data(), w.data(), b.data(), N, C, 1e-5);
    return dot(out, R);
  };
  loss();
  std::vector<double> dinp(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_backward<double>(dinp.data(), dw.data(), db.data(), R.data(), inp.data(), w.data(), mean.data(),
                             rstd.data(), N, C);
  expect_grad("layernorm dinp", inp, dinp, loss);
  expect_grad("layernorm dweight", w, dw, loss);
  expect_grad("layernorm dbias", b, db, loss);

  // dinp accumulates (residual stream).
  std::vector<double> dinp2(N * C, 3.0), dw2(C, 0.0), db2(C, 0.0);
  loss();
  layernorm_backward<double>(dinp2.data(), dw2.data(), db2.data(), R.data(), inp.data(), w.data(), mean.data(),
                             rstd.data(), N, C);
  for (int64_t i = 0; i < N * C; ++i) EXPECT_NEAR(dinp2[i], dinp[i] + 3.0, 1e-12);
}

void check_act(Act act, const char* name) {
  Rng rng(4);
  const int64_t n = 37;
  auto inp = randn(rng, n, 2.5), R = randn(rng, n);
  inp[0] = 0.0;  // the kink-free origin, and both tails
  inp[1] = -6.0;
  inp[2] = 6.0;
  std::vector<double> out(n);
  auto loss = [&] {
    act_forward<double>(out.data(), inp.data(), n, act);
    return dot(out, R);
  };
  std::vector<double> dinp(n);
  act_backward<double>(dinp.data(), R.data(), inp.data(), n, act);
  expect_grad(name, inp, dinp, loss);
  // dinp may alias dout.
  std::vector<double> alias = R;
  act_backward<double>(alias.data(), alias.data(), inp.data(), n, act);
  for (int64_t i = 0; i < n; ++i) EXPECT_DOUBLE_EQ(alias[i], dinp[i]);
}

TEST(GradCheck, Gelu) { check_act(Act::Gelu, "gelu"); }
TEST(GradCheck, QuickGelu) { check_act(Act::QuickGelu, "quickgelu"); }
TEST(GradCheck, GeluTanh) { check_act(Act::GeluTanh, "gelu_tanh"); }

TEST(Activation, KnownValues) {
  // gelu(1) = Phi(1) = 0.841344746..., quickgelu(1) = sigmoid(1.702) = 0.845843...
  double x = 1.0, y = 0;
  act_forward<double>(&y, &x, 1, Act::Gelu);
  EXPECT_NEAR(y, 0.8413447460685429, 1e-15);
  act_forward<double>(&y, &x, 1, Act::QuickGelu);
  EXPECT_NEAR(y, 1.0 / (1.0 + std::exp(-1.702)), 1e-15);
  // gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.8411919906082768 (torch float64).
  act_forward<double>(&y, &x, 1, Act::GeluTanh);
  EXPECT_NEAR(y, 0.8411919906082768, 1e-15);
  std::vector<double> a = {1, 2, 3}, b = {10, 20, 30};
  add_inplace<double>(a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<double>{11, 22, 33}));
}

TEST(GradCheck, DetectsAWrongGradient) {
  // The checker itself must fail on a gradient that is off by 1e-4 in one element.
  Rng rng(5);
  auto inp = randn(rng, 8), R = randn(rng, 8);
  std::vector<double> out(8), dinp(8);
  auto loss = [&] {
    act_forward<double>(out.data(), inp.data(), 8, Act::Gelu);
    return dot(out, R);
  };
  act_backward<double>(dinp.data(), R.data(), inp.data(), 8, Act::Gelu);
  dinp[3] += 1e-4;
  EXPECT_NONFATAL_FAILURE(expect_grad("wrong", inp, dinp, loss), "worst element 3");
}

}  // namespace
}  // namespace oc::ops::test
