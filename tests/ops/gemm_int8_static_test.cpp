// int8 with static input scales (ops/gemm_int8.h, `openclip quantize`): each producer that
// writes int8 rows with the next GEMM's static scale (the GEMM's own input path, LayerNorm,
// c_fc's s8 epilogue, attention) against the same quantization computed here from the fp32 /
// bf16 path it replaces, and non-finite rows marked NaN so they stay NaN as in fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "ops/attention.h"
#include "ops/backend.h"
#include "ops/cpu/attention.h"
#include "ops/gemm_int8.h"
#include "ops/layernorm.h"
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

int q_of(double x, double s) { return int(std::nearbyint(std::clamp(x / s, -127.0, 127.0))); }
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// C = (s * q(A)) @ (s_n * q(W))^T + bias with q(A) = round(A / s) clamped: the GEMM quantizing
// an fp32 A with W's static input scale. Row 1 holds NaN (its outputs NaN); row 2 is above the
// calibrated range (clamped to +-127, not wrapped).
TEST(GemmInt8Static, InputQuantizedWithTheWeightsStaticScale) {
  SKIP_WITHOUT_INT8();
  const int64_t M = 6, N = 20, K = 48;
  const float s = 0.02f;
  auto a = normal(size_t(M * K), 1);
  a[size_t(K + 7)] = kNaN;
  for (int64_t k = 0; k < K; ++k) a[size_t(2 * K + k)] *= 10.0f;
  const auto w = normal(size_t(N * K), 2, 0.05f), b = normal(size_t(N), 3);
  auto W = ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = N, .K = K, .name = "t.w", .input_scale = s});
  std::vector<float> C(size_t(M * N));
  ops::Epilogue e;
  e.bias = b.data();
  ops::gemm_int8(cpu(), {.M = M, .lda = K, .W = W.get(), .C = C.data(), .ldc = N, .e = e, .A32 = a.data()});
  for (int64_t n = 0; n < N; ++n) {
    float amax = 0;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(w[size_t(n * K + k)]));
    const double sw = amax / 127.0;
    for (int64_t m = 0; m < M; ++m) {
      if (m == 1) {
        EXPECT_TRUE(std::isnan(C[size_t(m * N + n)])) << "a NaN input row gives NaN outputs";
        continue;
      }
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += int64_t(q_of(a[size_t(m * K + k)], s)) * q_of(w[size_t(n * K + k)], sw);
      const double want = double(s) * sw * double(acc) + b[size_t(n)];
      // The scale products and the bias add round in fp32: a few ulp of the terms.
      ASSERT_NEAR(C[size_t(m * N + n)], want, 2e-5 * (std::fabs(want) + 1.0)) << "at [" << m << ", " << n << "]";
    }
  }
  EXPECT_THROW(ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = N, .K = K, .name = "t.w", .input_scale = -1.0f}),
               std::exception);
}

// c_fc's epilogue writing c_proj's int8 rows (GemmInt8Args::Cq): q = round(gelu(A W^T + b) /
// s_out), the same values as the fp32-out GEMM quantized here, within one step where the
// fp32 value sits at a rounding midpoint; a NaN input row keeps a NaN scale.
TEST(GemmInt8Static, EpilogueWritesTheNextGemmsInt8Rows) {
  SKIP_WITHOUT_INT8();
  const int64_t M = 9, N = 64, K = 40;
  auto a = normal(size_t(M * K), 4);
  a[size_t(3 * K)] = kNaN;
  const auto w = normal(size_t(N * K), 5, 0.1f), b = normal(size_t(N), 6);
  auto W = ops::quantize_weight_int8(cpu(), {.W = w.data(), .N = N, .K = K, .name = "t.c_fc.weight"});
  ops::Epilogue e;
  e.bias = b.data(), e.act = true;
  std::vector<float> C(size_t(M * N));
  ops::gemm_int8(cpu(), {.M = M, .lda = K, .W = W.get(), .C = C.data(), .ldc = N, .e = e, .A32 = a.data()});
  const float s_out = 0.01f;  // small enough that some outputs saturate
  std::vector<int8_t> q(size_t(M * N));
  std::vector<float> scale(static_cast<size_t>(M));
  const ops::Int8Out out{q.data(), scale.data(), s_out};
  ops::gemm_int8(cpu(), {.M = M, .lda = K, .W = W.get(), .ldc = N, .e = e, .A32 = a.data(), .Cq = &out});
  int saturated = 0;
  for (int64_t m = 0; m < M; ++m) {
    if (m == 3) {
      EXPECT_TRUE(std::isnan(scale[size_t(m)]));
      continue;
    }
    ASSERT_EQ(scale[size_t(m)], s_out);
    for (int64_t n = 0; n < N; ++n) {
      const int want = q_of(C[size_t(m * N + n)], s_out);
      saturated += std::abs(want) == 127;
      ASSERT_LE(std::abs(int(q[size_t(m * N + n)]) - want), 1) << "at [" << m << ", " << n << "]";
    }
  }
  EXPECT_GT(saturated, 0) << "the case covers saturation";
}

// LayerNorm with a static scale: the fp32 LayerNorm's rows quantized with it (one step at
// rounding midpoints: the fused row and LayerNormForward may differ in the last fp32 bit).
TEST(GemmInt8Static, LayerNormQuantizesWithTheStaticScale) {
  SKIP_WITHOUT_INT8();
  const int64_t N = 70, C = 768;  // threaded, ViT-B's width
  auto x = normal(size_t(N * C), 7, 2.0f);
  x[size_t(5 * C + 1)] = std::numeric_limits<float>::infinity();
  const auto w = normal(size_t(C), 8), b = normal(size_t(C), 9);
  std::vector<float> ln(x.size()), mean(static_cast<size_t>(N)), rstd(static_cast<size_t>(N)), mean8(mean), rstd8(rstd),
      x8 = x;
  cpu().run(ops::LayerNormForwardArgs{.out = ln.data(),
                                      .mean = mean.data(),
                                      .rstd = rstd.data(),
                                      .inp = x.data(),
                                      .weight = w.data(),
                                      .bias = b.data(),
                                      .N = N,
                                      .C = C,
                                      .eps = 1e-5});
  std::vector<int8_t> q(x.size());
  std::vector<float> scale(static_cast<size_t>(N));
  const float s = 0.03f;
  ops::layernorm_int8(cpu(), {.q = q.data(),
                              .scale = scale.data(),
                              .mean = mean8.data(),
                              .rstd = rstd8.data(),
                              .inp = x8.data(),
                              .weight = w.data(),
                              .bias = b.data(),
                              .N = N,
                              .C = C,
                              .eps = 1e-5,
                              .static_scale = s});
  for (int64_t i = 0; i < N; ++i) {
    if (i == 5) {
      EXPECT_TRUE(std::isnan(scale[size_t(i)])) << "a row holding Inf";
      continue;
    }
    ASSERT_EQ(scale[size_t(i)], s);
    for (int64_t c = 0; c < C; ++c)
      ASSERT_LE(std::abs(int(q[size_t(i * C + c)]) - q_of(ln[size_t(i * C + c)], s)), 1) << i << ", " << c;
  }
}

// Attention writing out_proj's int8 rows: the bf16 attention's output quantized with the
// static scale, within one step (that output is rounded to bf16, 2^-9 relative, before it is
// divided by s; the int8 kernel quantizes the fp32 value). Both kernels (AVX-512 and the
// sgemm fallback, and AVX-512 beside AMX where the CPU has AMX). A NaN in one key of batch
// item 1 reaches every row of that item only.
void check_attention_int8(bool fallback, bool amx = true) {
  ops::cpu::set_attention_bf16_fallback(fallback);
  ops::cpu::set_attention_bf16_amx(amx);
  SCOPED_TRACE(ops::cpu::attention_bf16_kernel());
  const int64_t B = 3, T = 50, C = 128, H = 2;
  const auto qf = normal(size_t(B * T * 3 * C), 10, 1.5f);
  std::vector<bf16> qkv(qf.size());
  for (size_t i = 0; i < qf.size(); ++i) qkv[i] = to_bf16(qf[i]);
  qkv[size_t((1 * T + 4) * 3 * C + C + 3)] = to_bf16(kNaN);  // a key of item 1, head 0
  std::vector<bf16> out(size_t(B * T * C));
  std::vector<float> att(size_t(B * H * T * T)), scale(size_t(B * T));
  cpu().run(ops::AttentionForwardBf16Args{
      .out = out.data(), .att = att.data(), .qkv = qkv.data(), .B = B, .Tn = T, .C = C, .H = H, .causal = false});
  std::vector<int8_t> q(out.size());
  const float s = 0.008f;
  ops::attention_int8(cpu(), {.out = {q.data(), scale.data(), s},
                              .att = att.data(),
                              .qkv = qkv.data(),
                              .B = B,
                              .Tn = T,
                              .C = C,
                              .H = H,
                              .causal = false});
  ops::cpu::set_attention_bf16_fallback(false);
  ops::cpu::set_attention_bf16_amx(true);
  for (int64_t r = 0; r < B * T; ++r) {
    if (r / T == 1) {
      ASSERT_TRUE(std::isnan(scale[size_t(r)])) << "row " << r;
      continue;
    }
    ASSERT_EQ(scale[size_t(r)], s) << "row " << r;
    for (int64_t c = 0; c < C; ++c)
      ASSERT_LE(std::abs(int(q[size_t(r * C + c)]) - q_of(to_f32(out[size_t(r * C + c)]), s)), 1) << r << ", " << c;
  }
}

TEST(GemmInt8Static, AttentionWritesOutProjsInt8Rows) {
  SKIP_WITHOUT_INT8();
  check_attention_int8(false);
  check_attention_int8(false, false);
  check_attention_int8(true);
}

}  // namespace
}  // namespace oc
