// The CPU's int8 GEMMs (ops/gemm_int8.h) against the contract computed here independently:
// the same symmetric quantization (per output channel for W, per row for A), the int32
// products in int64, then scale_m * scale_n * acc + bias and the activation in double.
#include "ops/gemm_int8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "ops/backend.h"
#include "ops/bf16_ops.h"
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
  bool a_f32 = false;  // A given as fp32 (A32) rather than bf16
};

void check_case(const Case& c) {
  SCOPED_TRACE(::testing::Message() << "M=" << c.M << " N=" << c.N << " K=" << c.K << " bias=" << c.bias
                                    << " act=" << c.act << " bf16=" << c.out_bf16 << " A32=" << c.a_f32);
  const auto w = normal(size_t(c.N * c.K), 1, 0.05f), b = normal(size_t(c.N), 2);
  std::vector<bf16> a(size_t(c.M * c.K));
  const auto af = normal(a.size(), 3, 3.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = to_bf16(af[i]);
  auto a_at = [&](size_t i) { return c.a_f32 ? af[i] : to_f32(a[i]); };  // the A the GEMM reads
  auto W = ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = c.N, .K = c.K, .name = "test.w"});
  const int64_t ldc = c.N + c.ldc_pad;
  std::vector<float> C(size_t(c.M * ldc), -7.0f);
  std::vector<bf16> C16(C.size(), to_bf16(-7.0f));
  ops::Epilogue e;
  e.bias = c.bias ? b.data() : nullptr, e.act = c.act;
  ops::gemm_int8(cpu(), {.M = c.M,
                         .A = c.a_f32 ? nullptr : a.data(),
                         .lda = c.K,
                         .W = W.get(),
                         .C = c.out_bf16 ? nullptr : C.data(),
                         .C16 = c.out_bf16 ? C16.data() : nullptr,
                         .ldc = ldc,
                         .e = e,
                         .A32 = c.a_f32 ? af.data() : nullptr});
  std::vector<int> qa, qw;
  std::vector<float> arow(size_t(c.K));
  for (int64_t m = 0; m < c.M; ++m) {
    for (int64_t k = 0; k < c.K; ++k) arow[size_t(k)] = a_at(size_t(m * c.K + k));
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
                        Case{64, 48, 96, true, false, true, 0}, Case{49, 40, 192, true, false, false, 0, true},
                        Case{3, 16, 48, false, false, true, 2, true}})
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

// LayerNormInt8 (residual add + LayerNorm + quantization in one pass) against the unfused
// path it replaces: AddLayerNormForwardBf16 / LayerNormForwardBf16, then the GEMM quantizing
// the bf16 rows itself. The rows, scales, statistics and residual stream must be the same
// bits, and so the GEMM outputs; a row holding NaN gets a NaN scale (its outputs NaN).
void check_layernorm_int8(int64_t N, int64_t C, bool residual) {
  SCOPED_TRACE(::testing::Message() << "N=" << N << " C=" << C << " residual=" << residual);
  auto x = normal(size_t(N * C), 7, 2.0f);
  const auto r = normal(size_t(N * C), 8), w = normal(size_t(C), 9), b = normal(size_t(C), 10);
  const auto wm = normal(size_t(24 * C), 11, 0.05f);
  x[size_t(C + 3)] = std::numeric_limits<float>::quiet_NaN();  // row 1
  const size_t rows_n = size_t(N), cols_n = size_t(C);
  std::vector<float> x_ref = x, mean(rows_n), rstd(rows_n), mean_ref(mean), rstd_ref(rstd);
  std::vector<bf16> ln(rows_n * cols_n);
  if (residual)
    cpu().run(ops::AddLayerNormForwardBf16Args{.xm = x_ref.data(),
                                               .out = ln.data(),
                                               .mean = mean_ref.data(),
                                               .rstd = rstd_ref.data(),
                                               .x = r.data(),
                                               .weight = w.data(),
                                               .bias = b.data(),
                                               .N = N,
                                               .C = C,
                                               .eps = 1e-5});
  else
    cpu().run(ops::LayerNormForwardBf16Args{.out = ln.data(),
                                            .mean = mean_ref.data(),
                                            .rstd = rstd_ref.data(),
                                            .inp = x_ref.data(),
                                            .weight = w.data(),
                                            .bias = b.data(),
                                            .N = N,
                                            .C = C,
                                            .eps = 1e-5});
  std::vector<int8_t> q(rows_n * cols_n, 99);
  std::vector<float> scale(rows_n);
  ops::layernorm_int8(cpu(), {.q = q.data(),
                              .scale = scale.data(),
                              .mean = mean.data(),
                              .rstd = rstd.data(),
                              .inp = x.data(),
                              .residual = residual ? r.data() : nullptr,
                              .weight = w.data(),
                              .bias = b.data(),
                              .N = N,
                              .C = C,
                              .eps = 1e-5});
  EXPECT_EQ(0, std::memcmp(x.data(), x_ref.data(), x.size() * 4)) << "the residual stream as the unfused pass";
  std::vector<int> qr;
  std::vector<float> row(cols_n);
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t c = 0; c < C; ++c) row[size_t(c)] = to_f32(ln[size_t(i * C + c)]);
    if (i == 1) {
      EXPECT_TRUE(std::isnan(scale[1])) << "a row holding NaN has a NaN scale";
      continue;
    }
    const double s = quantize_row(row.data(), C, &qr, true);
    ASSERT_EQ(float(s), scale[size_t(i)]) << "row " << i;
    for (int64_t c = 0; c < C; ++c) ASSERT_EQ(qr[size_t(c)], q[size_t(i * C + c)]) << "at [" << i << ", " << c << "]";
    ASSERT_EQ(mean[size_t(i)], mean_ref[size_t(i)]);
    ASSERT_EQ(rstd[size_t(i)], rstd_ref[size_t(i)]);
  }
  auto W = ops::quantize_weight_int8(cpu(), {.W = wm.data(), .N = 24, .K = C, .name = "test.w"});
  std::vector<float> fused(size_t(N * 24)), unfused(fused.size());
  const ops::Int8Rows rows{q.data(), scale.data()};
  ops::gemm_int8(cpu(), {.M = N, .W = W.get(), .C = fused.data(), .ldc = 24, .Aq = &rows});
  ops::gemm_int8(cpu(), {.M = N, .A = ln.data(), .lda = C, .W = W.get(), .C = unfused.data(), .ldc = 24});
  for (size_t i = 0; i < fused.size(); ++i) {
    if (i / 24 == 1) {
      ASSERT_TRUE(std::isnan(fused[i]) && std::isnan(unfused[i])) << i;
      continue;
    }
    ASSERT_EQ(fused[i], unfused[i]) << "GEMM output " << i;
  }
}

TEST(GemmInt8, LayerNormInt8IsTheUnfusedLayerNormThenQuantization) {
  SKIP_WITHOUT_INT8();
  check_layernorm_int8(5, 40, false);
  check_layernorm_int8(70, 768, true);  // threaded (N * C >= 2^14), ViT-B's width
  check_layernorm_int8(3, 17, true);    // a width no vector length divides
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
