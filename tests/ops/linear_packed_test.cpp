// fp32 inference weights prepared once (Backend::prepare_weight_f32, ops/cpu/linear_packed.cpp):
// the same linear as the plain path within fp32 summation-order error, and the plain path
// again, bitwise, once released.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "model/clip.h"
#include "model/config.h"
#include "ops/cpu/linear_packed.h"
#include "ops/registry.h"

namespace oc {
namespace {

std::vector<float> normal(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(rng.normal());
  return v;
}

std::vector<float> linear(ops::Backend& be, const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& b, int64_t M, int64_t K, int64_t N) {
  std::vector<float> y(size_t(M * N));
  be.run(ops::LinearForwardArgs{.out = y.data(), .inp = x.data(), .weight = w.data(), .bias = b.data(), .M = M,
                                .K = K, .N = N});
  return y;
}

TEST(LinearPrepared, AgreesWithThePlainPathAndReleasesToIt) {
  ops::Backend& be = ops::backend("cpu");
  for (int64_t M : {1, 50, 300}) {
    const int64_t K = 192, N = 320;
    const auto x = normal(size_t(M * K), 1), w = normal(size_t(N * K), 2), b = normal(size_t(N), 3);
    const auto plain = linear(be, x, w, b, M, K, N);
    const int64_t before = ops::prepared_weight_f32_count();
    be.prepare_weight_f32(w.data(), N, K);
    const auto packed = linear(be, x, w, b, M, K, N);
    // Both are fp32 sums of K = 192 products of N(0,1) values in different orders: |error| per
    // element ~ K * 2^-24 * |terms| ~ 1e-5 * sqrt(K) typical; 1e-4 absolute + 1e-5 relative
    // leaves a wide margin while a wrong layout (garbage or transposed W) misses by O(1).
    for (size_t i = 0; i < plain.size(); ++i)
      ASSERT_NEAR(packed[i], plain[i], 1e-4 + 1e-5 * std::fabs(plain[i])) << "M=" << M << " i=" << i;
    be.release_weight_f32(w.data());
    EXPECT_EQ(ops::prepared_weight_f32_count(), before);
    EXPECT_EQ(linear(be, x, w, b, M, K, N), plain) << "released: the plain path, bitwise";
  }
}

TEST(LinearPrepared, ModelPreparesForFp32InferenceAndReleasesBeforeWrites) {
  ModelCfg cfg = load_model_config("test-tiny");
  const int64_t before = ops::prepared_weight_f32_count();
  {
    Clip model(cfg, ops::backend("cpu"));
    model.init(0);
    model.plan_inference(2);
    const int S = cfg.vision.image_size;
    const auto img = normal(size_t(2 * 3 * S * S), 4);
    std::vector<float> e1(size_t(2 * cfg.embed_dim)), e2(e1.size());
    model.encode_image(img.data(), 2, e1.data());
    const int64_t blocks = int64_t(cfg.vision.layers);
    EXPECT_EQ(ops::prepared_weight_f32_count(), before + 4 * blocks) << "in_proj, out_proj, c_fc, c_proj per block";
    // A write through params() releases the copies; the next encode prepares them again from
    // the new values (a stale copy would give the old embedding).
    float* p = model.params();
    EXPECT_EQ(ops::prepared_weight_f32_count(), before);
    for (size_t i = 0; i < model.table().total; ++i) p[i] *= 0.5f;
    model.encode_image(img.data(), 2, e2.data());
    EXPECT_NE(e1, e2);
    model.plan_training(2);
    EXPECT_EQ(ops::prepared_weight_f32_count(), before) << "training never keeps prepared fp32 weights";
    model.plan_inference(2);
    model.encode_image(img.data(), 2, e1.data());
  }
  EXPECT_EQ(ops::prepared_weight_f32_count(), before) << "the model releases its copies";
}

}  // namespace
}  // namespace oc
