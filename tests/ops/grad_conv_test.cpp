// Finite-difference gradient checks (double) of the convolution-tower ops: conv2d (backward
// data and weights), the depthwise conv2d with bias (ConvNeXt), BatchNorm2d in train and eval mode, average pooling,
// AttentionPool2d's tokens and ReLU; plus the running-statistics update against its definition.
#include <cmath>

#include "core/check.h"
#include "ops/cpu/batchnorm.h"
#include "ops/cpu/conv.h"
#include "ops/cpu/dwconv.h"
#include "ops/cpu/pool.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

void check_conv(const ConvShape s, uint64_t seed) {
  Rng rng(seed);
  auto x = randn(rng, s.N * s.H * s.W * s.C), w = randn(rng, s.OC * s.C * s.K * s.K);
  auto R = randn(rng, s.N * s.OH() * s.OW() * s.OC);
  std::vector<double> y(R.size());
  auto loss = [&] {
    conv2d_forward<double>(y.data(), x.data(), w.data(), s);
    return dot(y, R);
  };
  std::vector<double> dx(x.size(), 7.0), dw(w.size(), 0.25);  // dx is assigned, dw accumulates onto 0.25
  conv2d_backward_data<double>(dx.data(), R.data(), w.data(), s);
  conv2d_backward_weights<double>(dw.data(), R.data(), x.data(), s);
  for (double& g : dw) g -= 0.25;
  expect_grad("conv dx", x, dx, loss);
  expect_grad("conv dw", w, dw, loss);
}

TEST(GradCheck, Conv2dStem) { check_conv({2, 7, 6, 3, 4, 3, 2, 1}, 41); }       // 3x3, stride 2, pad 1 (odd size)
TEST(GradCheck, Conv2dSame3x3) { check_conv({2, 5, 5, 4, 3, 3, 1, 1}, 42); }    // Bottleneck conv2
TEST(GradCheck, Conv2dPointwise) { check_conv({3, 4, 3, 5, 6, 1, 1, 0}, 43); }  // conv1/conv3/downsample

TEST(Conv2d, KnownValue) {
  // One 2x2 input channel, a 3x3 kernel of ones, pad 1: each output is the sum of its neighbours.
  const ConvShape s{1, 2, 2, 1, 1, 3, 1, 1};
  const std::vector<double> x = {1, 2, 3, 4}, w(9, 1.0);
  std::vector<double> y(4);
  conv2d_forward<double>(y.data(), x.data(), w.data(), s);
  for (double v : y) EXPECT_EQ(v, 10.0);
  EXPECT_THROW(conv2d_forward<double>(y.data(), x.data(), w.data(), ConvShape{1, 2, 2, 1, 1, 5, 1, 0}), Error);
}

void check_dwconv(const DwConvShape s, uint64_t seed) {
  Rng rng(seed);
  auto x = randn(rng, s.in_size()), w = randn(rng, s.weight_size()), b = randn(rng, s.C);
  auto R = randn(rng, s.out_size());
  std::vector<double> y(R.size());
  auto loss = [&] {
    dwconv2d_forward<double>(y.data(), x.data(), w.data(), b.data(), s);
    return dot(y, R);
  };
  // dx is assigned, dw and db accumulate onto 0.25
  std::vector<double> dx(x.size(), 7.0), dw(w.size(), 0.25), db(b.size(), 0.25);
  dwconv2d_backward_data<double>(dx.data(), R.data(), w.data(), s);
  dwconv2d_backward_weights<double>(dw.data(), db.data(), R.data(), x.data(), s);
  for (double& g : dw) g -= 0.25;
  for (double& g : db) g -= 0.25;
  expect_grad("dwconv dx", x, dx, loss);
  expect_grad("dwconv dw", w, dw, loss);
  expect_grad("dwconv db", b, db, loss);
}

TEST(GradCheck, DwConvConvNeXt) { check_dwconv({1, 8, 7, 4, 7, 3}, 48); }  // 7x7, pad 3: ConvNeXt's conv_dw
TEST(GradCheck, DwConvKernelWiderThanMap) { check_dwconv({1, 4, 3, 3, 7, 3}, 49); }
TEST(GradCheck, DwConvValid) { check_dwconv({2, 6, 5, 4, 3, 0}, 50); }

TEST(DwConv2d, KnownValue) {
  // One 2x2 channel, a 3x3 kernel of ones, pad 1, bias 0.5: each output is the sum of all four + 0.5.
  const DwConvShape s{1, 2, 2, 1, 3, 1};
  const std::vector<double> x = {1, 2, 3, 4}, w(9, 1.0), b = {0.5};
  std::vector<double> y(4);
  dwconv2d_forward<double>(y.data(), x.data(), w.data(), b.data(), s);
  for (double v : y) EXPECT_EQ(v, 10.5);
  EXPECT_THROW(dwconv2d_forward<double>(y.data(), x.data(), w.data(), b.data(), DwConvShape{1, 2, 2, 1, 5, 0}), Error);
}

void check_batchnorm(bool training) {
  Rng rng(44);
  const int64_t R = 9, C = 5;
  auto x = randn(rng, R * C), w = randn(rng, C), b = randn(rng, C), G = randn(rng, R * C);
  for (double& v : x) v = 3 + 2 * v;  // a mean and a scale away from 0 and 1
  std::vector<double> rm0(C, 0.5), rv0(C, 2.0), y(R * C), mean(C), rstd(C);
  auto loss = [&] {
    std::vector<double> rm = rm0, rv = rv0;
    batchnorm_forward<double>(y.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(), b.data(), R,
                              C, 1e-5, 0.1, training);
    return dot(y, G);
  };
  loss();
  std::vector<double> dx(x.size(), 7.0), dw(C, 0.25), db(C, 0.25);
  batchnorm_backward<double>(dx.data(), dw.data(), db.data(), G.data(), x.data(), w.data(), mean.data(), rstd.data(), R,
                             C, training);
  for (double& g : dw) g -= 0.25;
  for (double& g : db) g -= 0.25;
  expect_grad("batchnorm dx", x, dx, loss);
  expect_grad("batchnorm dweight", w, dw, loss);
  expect_grad("batchnorm dbias", b, db, loss);
}

TEST(GradCheck, BatchNormTrain) { check_batchnorm(true); }
TEST(GradCheck, BatchNormEval) { check_batchnorm(false); }

TEST(BatchNorm, RunningStatisticsAsPyTorch) {
  // running = 0.9 * running + 0.1 * stat, with the unbiased variance; eval reads them only.
  const int64_t R = 4, C = 1;
  const std::vector<double> x = {1, 2, 3, 6}, w = {1}, b = {0};  // mean 3, biased var 3.5, unbiased 14/3
  std::vector<double> y(4), mean(1), rstd(1), rm = {1.0}, rv = {2.0};
  batchnorm_forward<double>(y.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(), b.data(), R,
                            C, 1e-5, 0.1, true);
  EXPECT_NEAR(rm[0], 0.9 * 1 + 0.1 * 3, 1e-15);
  EXPECT_NEAR(rv[0], 0.9 * 2 + 0.1 * 14.0 / 3.0, 1e-15);
  EXPECT_NEAR(y[3], 3 / std::sqrt(3.5 + 1e-5), 1e-12);
  const double rm1 = rm[0], rv1 = rv[0];
  batchnorm_forward<double>(y.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(), b.data(), R,
                            C, 1e-5, 0.1, false);
  EXPECT_EQ(rm[0], rm1);
  EXPECT_EQ(rv[0], rv1);
  EXPECT_NEAR(y[0], (1 - rm1) / std::sqrt(rv1 + 1e-5), 1e-12);
  EXPECT_THROW(batchnorm_forward<double>(y.data(), mean.data(), rstd.data(), rm.data(), rv.data(), x.data(), w.data(),
                                         b.data(), 1, C, 1e-5, 0.1, true),
               Error);  // one value per channel: no variance (PyTorch refuses it too)
}

TEST(GradCheck, AvgPool) {
  Rng rng(45);
  for (int64_t k : {2, 3}) {
    const int64_t N = 2, H = 7, W = 6, C = 3;  // 7 and 6 not multiples of 3: trailing rows unread
    auto x = randn(rng, N * H * W * C), R = randn(rng, N * (H / k) * (W / k) * C);
    std::vector<double> y(R.size());
    auto loss = [&] {
      avg_pool_forward<double>(y.data(), x.data(), N, H, W, C, k);
      return dot(y, R);
    };
    std::vector<double> dx(x.size(), 7.0);
    avg_pool_backward<double>(dx.data(), R.data(), N, H, W, C, k);
    expect_grad("avg_pool dx k=" + std::to_string(k), x, dx, loss);
  }
}

TEST(GradCheck, AttnPoolTokens) {
  Rng rng(46);
  const int64_t N = 2, HW = 4, C = 3;
  auto f = randn(rng, N * HW * C), pos = randn(rng, (HW + 1) * C), R = randn(rng, N * (HW + 1) * C);
  std::vector<double> x(R.size());
  auto loss = [&] {
    attnpool_tokens_forward<double>(x.data(), f.data(), pos.data(), N, HW, C);
    return dot(x, R);
  };
  loss();
  EXPECT_NEAR(x[C + 1], f[1] + pos[C + 1], 1e-15);  // token 1 of sample 0 is patch 0
  std::vector<double> df(f.size(), 7.0), dpos(pos.size(), 0.25);
  attnpool_tokens_backward<double>(df.data(), dpos.data(), R.data(), N, HW, C);
  for (double& g : dpos) g -= 0.25;
  expect_grad("attnpool_tokens dfeat", f, df, loss);
  expect_grad("attnpool_tokens dpos", pos, dpos, loss);
}

TEST(GradCheck, Relu) {
  Rng rng(47);
  auto x = randn(rng, 50), R = randn(rng, 50);
  for (double& v : x) v += v > 0 ? 0.01 : -0.01;  // away from the kink at 0
  std::vector<double> y(x.size());
  auto loss = [&] {
    relu_forward<double>(y.data(), x.data(), int64_t(x.size()));
    return dot(y, R);
  };
  loss();
  std::vector<double> dx(x.size());
  relu_backward<double>(dx.data(), R.data(), y.data(), int64_t(x.size()));
  expect_grad("relu dx", x, dx, loss);
  const double nan = std::nan("");
  double o;
  relu_forward<double>(&o, &nan, 1);
  EXPECT_TRUE(std::isnan(o));  // as torch.relu
}

}  // namespace
}  // namespace oc::ops::test
