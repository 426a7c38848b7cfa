// The CPU's int8 GEMMs (ops/gemm_int8.h) against the contract computed here independently:
// the same symmetric quantization (per output channel for W, per row for A), the int32
// products in int64, then scale_m * scale_n * acc + bias and the activation in double.
#include "ops/gemm_int8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "ops/backend.h"
#include "ops/registry.h"

namespace oc {
namespace {

ops::Backend& cpu() { return ops::backend("cpu"); }

#define SKIP_WITHOUT_INT8() \
  if (!ops::has_int8(cpu())) GTEST_SKIP() << "this CPU has no VNNI: the cpu backend has no int8 GEMMs"

std::vector<float> normal(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * float(rng.normal());
  return v;
}

// Symmetric quantization of one row, s = max|x| / 127 (1 for a zero row): a weight row as
// q = round(x / s), an activation row as q = round(x * (127 / max|x|)) (ops/gemm_int8.h).
double quantize_row(const float* x, int64_t n, std::vector<int>* q, bool activation) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float s = amax > 0 ? amax / 127.0f : 1.0f, inv = amax > 0 ? 127.0f / amax : 0.0f;
  q->resize(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    (*q)[size_t(i)] = int(std::nearbyint(std::clamp(activation ? x[i] * inv : x[i] / s, -127.0f, 127.0f)));
  return s;
}

double gelu(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }

struct Case {
  int64_t M, N, K;
  bool bias, act, out_bf16;
  int64_t ldc_pad;
};

void check_case(const Case& c) {
  SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K << " bias=" << c.bias
                                    << " act=" << c.act << " bf16=" << c.out_bf16);
  const auto w = normal(size_t(c.N * c.K), 1, 0.05f), b = normal(size_t(c.N), 2);
  std::vector<bf16> a(size_t(c.M * c.K));
  const auto af = normal(a.size(), 3, 3.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = to_bf16(af[i]);
  auto W = ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = c.N, .K = c.K, .name = "test.w"});
  const int64_t ldc = c.N + c.ldc_pad;
  std::vector<float> C(size_t(c.M * ldc), -7.0f);
  std::vector<bf16> C16(C.size(), to_bf16(-7.0f));
  ops::Epilogue e;
  e.bias = c.bias ? b.data() : nullptr, e.act = c.act;
  ops::gemm_int8(cpu(), {.M = c.M,
                         .A = a.data(),
                         .lda = c.K,
                         .W = W.get(),
                         .C = c.out_bf16 ? nullptr : C.data(),
                         .C16 = c.out_bf16 ? C16.data() : nullptr,
                         .ldc = ldc,
                         .e = e});
  std::vector<int> qa, qw;
  std::vector<float> arow(size_t(c.K));
  for (int64_t m = 0; m < c.M; ++m) {
    for (int64_t k = 0; k < c.K; ++k) arow[size_t(k)] = to_f32(a[size_t(m * c.K + k)]);
    const double sa = quantize_row(arow.data(), c.K, &qa, true);
    for (int64_t n = 0; n < c.N; ++n) {
      const double sw = quantize_row(w.data() + n * c.K, c.K, &qw, false);
      int64_t acc = 0;
      for (int64_t k = 0; k < c.K; ++k) acc += int64_t(qa[size_t(k)]) * qw[size_t(k)];
      double want = sa * sw * double(acc) + (c.bias ? b[size_t(n)] : 0.0);
      if (c.act) want = gelu(want);
      const double got = c.out_bf16 ? to_f32(C16[size_t(m * ldc + n)]) : C[size_t(m * ldc + n)];
      // fp32: the two scale products and the bias add round in fp32 (a few ulp of the value);
      // bf16 out: one more rounding, 2^-8 relative. GELU: oneDNN's erf approximation is off
      // by up to a few 1e-7 absolute near 0 (measured 3.2e-7), hence the 1e-6 floor.
      const double tol = (c.out_bf16 ? 4e-3 : 2e-5) * (std::fabs(want) + 1e-2) + (c.act ? 1e-6 : 0.0);
      ASSERT_NEAR(got, want, tol) << "at [" << m << ", " << n << "]";
    }
    for (int64_t n = c.N; n < ldc; ++n)  // the padding of each row is not written
      ASSERT_EQ(c.out_bf16 ? to_f32(C16[size_t(m * ldc + n)]) : C[size_t(m * ldc + n)], -7.0f);
  }
}

TEST(GemmInt8, MatchesPerRowPerChannelQuantizedProduct) {
  SKIP_WITHOUT_INT8();
  for (const Case& c : {Case{5, 24, 40, true, false, false, 0}, Case{1, 17, 33, false, false, false, 3},
                        Case{50, 96, 64, true, true, false, 0}, Case{7, 64, 200, true, true, true, 5},
                        Case{64, 48, 96, true, false, true, 0}})
    check_case(c);
}

TEST(GemmInt8, NonFiniteActivationsGiveNonFiniteRows) {
  SKIP_WITHOUT_INT8();
  const int64_t M = 4, N = 8, K = 16;
  const auto w = normal(size_t(N * K), 5, 0.1f);
  auto W = ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = N, .K = K, .name = "test.w"});
  std::vector<bf16> a(size_t(M * K), to_bf16(0.5f));
  a[3] = to_bf16(std::numeric_limits<float>::quiet_NaN());         // row 0
  a[2 * K + 5] = to_bf16(std::numeric_limits<float>::infinity());  // row 2
  std::vector<float> C(size_t(M * N));
  ops::gemm_int8(cpu(), {.M = M, .A = a.data(), .lda = K, .W = W.get(), .C = C.data(), .ldc = N});
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_TRUE(std::isnan(C[size_t(n)])) << "NaN in row 0 reaches every output of the row";
    EXPECT_TRUE(std::isnan(C[size_t(2 * N + n)])) << "Inf in row 2 makes the row non-finite (NaN)";
    EXPECT_TRUE(std::isfinite(C[size_t(N + n)]) && std::isfinite(C[size_t(3 * N + n)])) << "other rows are finite";
  }
}

TEST(GemmInt8, BadWeightsAndScalesAreErrorsNamingTheTensor) {
  SKIP_WITHOUT_INT8();
  std::vector<float> w(6 * 4, 0.25f);
  w[9] = std::numeric_limits<float>::infinity();
  auto expect_error = [](auto f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one naming " << part;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error([&] { ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = 6, .K = 4, .name = "blk.c_fc.weight"}); },
               "blk.c_fc.weight");
  w[9] = 0.5f;
  const std::vector<float> three(3, 0.1f);
  expect_error(
      [&] {
        ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = 6, .K = 4, .name = "x.in_proj_weight", .scales = three});
      },
      "x.in_proj_weight");
  std::vector<float> six(6, 0.1f);
  six[4] = std::numeric_limits<float>::quiet_NaN();
  expect_error(
      [&] {
        ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = 6, .K = 4, .name = "y.out_proj.weight", .scales = six});
      },
      "y.out_proj.weight");
  EXPECT_THROW(ops::quantize_weight_int8(ops::backend("ref"), {.W = w.data(), .N = 6, .K = 4, .name = "z"}),
               std::exception)
      << "a backend without int8 GEMMs says so";
}

}  // namespace
}  // namespace oc
