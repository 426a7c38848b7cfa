// fp32 inference weights prepared once (Backend::prepare_weight_f32, ops/cpu/linear_packed.cpp):
// the same linear as the plain path within fp32 summation-order error, and the plain path
// again, bitwise, once released. The model's side: tests/model/prepared_f32_test.cpp.
#include "ops/cpu/linear_packed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "normal_floats.h"
#include "ops/registry.h"

namespace oc {
namespace {

std::vector<float> linear(ops::Backend& be, const std::vector<float>& x, const std::vector<float>& w,
                          const std::vector<float>& b, int64_t M, int64_t K, int64_t N) {
  std::vector<float> y(size_t(M * N));
  be.run(ops::LinearForwardArgs{
      .out = y.data(), .inp = x.data(), .weight = w.data(), .bias = b.data(), .M = M, .K = K, .N = N});
  return y;
}

TEST(LinearPrepared, AgreesWithThePlainPathAndReleasesToIt) {
  ops::Backend& be = ops::backend("cpu");
  for (int64_t M : {1, 50, 300}) {
    const int64_t K = 192, N = 320;
    const auto x = test::normal_floats(size_t(M * K), 1), w = test::normal_floats(size_t(N * K), 2),
               b = test::normal_floats(size_t(N), 3);
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

}  // namespace
}  // namespace oc
