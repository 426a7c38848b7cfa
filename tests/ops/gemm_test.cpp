// gemm: the float paths (oneDNN sgemm, bf16 rounding fallback, native bf16 matmul) against
// the double loops, every transpose combination, padded leading dimensions, alpha/beta,
// batched, and the BLAS edge cases (K = 0, beta = 0 never reads C).
#include <gtest/gtest.h>

#include <cmath>
#include <dnnl.hpp>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/rng.h"
#include "ops/cpu/gemm_internal.h"
#include "ops/cpu/gemm.h"
#include "ops/dnnl_info.h"

namespace oc::ops {
namespace {

struct Case {
  bool ta, tb;
  int64_t M, N, K;
  float alpha, beta;
};

struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> A, B, C;
};

// Leading dimensions padded by 3 so a stride bug cannot hide behind packed storage.
Operands make(const Case& c, uint64_t seed) {
  Rng rng(seed);
  Operands o;
  const int64_t a_rows = c.ta ? c.K : c.M, a_cols = c.ta ? c.M : c.K;
  const int64_t b_rows = c.tb ? c.N : c.K, b_cols = c.tb ? c.K : c.N;
  o.lda = a_cols + 3, o.ldb = b_cols + 3, o.ldc = c.N + 3;
  o.A.resize(a_rows * o.lda), o.B.resize(b_rows * o.ldb), o.C.resize(c.M * o.ldc);
  for (auto& x : o.A) x = float(rng.normal());
  for (auto& x : o.B) x = float(rng.normal());
  for (auto& x : o.C) x = float(rng.normal());
  return o;
}

// Rigorous bound on the float error: (K + 4) u (|alpha| sum_k |a_ik b_kj| + |beta c_ij|), u = 2^-24:
// any accumulation order with fp32 rounding (FMA or not) stays inside it; a wrong element
// (missed term, wrong stride) is off by O(|a b|) and far outside.
void expect_close(const Case& c, const Operands& o, const std::vector<float>& got, Prec prec, const char* what) {
  std::vector<double> A(o.A.begin(), o.A.end()), B(o.B.begin(), o.B.end()), ref(o.C.begin(), o.C.end());
  gemm<double>(c.ta, c.tb, c.M, c.N, c.K, c.alpha, A.data(), o.lda, B.data(), o.ldb, c.beta, ref.data(), o.ldc, prec);
  const double u = std::ldexp(1.0, -24);
  auto in = [&](float x) { return prec == Prec::BF16 ? double(round_bf16(x)) : double(x); };
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double mag = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const float a = c.ta ? o.A[k * o.lda + i] : o.A[i * o.lda + k];
        const float b = c.tb ? o.B[j * o.ldb + k] : o.B[k * o.ldb + j];
        mag += std::abs(in(a) * in(b));
      }
      const double bound = double(c.K + 4) * u * (std::abs(c.alpha) * mag + std::abs(c.beta * o.C[i * o.ldc + j]));
      ASSERT_LE(std::abs(got[i * o.ldc + j] - ref[i * o.ldc + j]), bound)
          << what << " ta=" << c.ta << " tb=" << c.tb << " at (" << i << "," << j << ")";
    }
  // The padding of C is never written.
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = c.N; j < o.ldc; ++j) ASSERT_EQ(got[i * o.ldc + j], o.C[i * o.ldc + j]) << what;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (int t = 0; t < 4; ++t) {
    v.push_back({bool(t & 1), bool(t & 2), 37, 29, 71, 0.7f, 0.3f});
    v.push_back({bool(t & 1), bool(t & 2), 5, 130, 64, 1.0f, 0.0f});
    v.push_back({bool(t & 1), bool(t & 2), 150, 140, 70, -1.5f, 1.0f});  // threaded oneDNN
  }
  return v;
}

TEST(Gemm, F32MatchesDouble) {
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    Operands o = make(c, seed++);
    std::vector<float> C = o.C;
    gemm<float>(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, C.data(), o.ldc);
    expect_close(c, o, C, Prec::F32, "f32");
  }
}

TEST(Gemm, Bf16MatchesDoubleOnRoundedInputs) {
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    Operands o = make(c, seed++);
    std::vector<float> C = o.C, C32 = o.C;
    gemm<float>(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, C.data(), o.ldc,
                Prec::BF16);
    expect_close(c, o, C, Prec::BF16, native_bf16() ? "bf16 native" : "bf16 rounded");
    // And the inputs really were rounded: bf16 has 8 mantissa bits, so the result moves by
    // ~1e-2 relative somewhere, far above the fp32 error.
    gemm<float>(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta, C32.data(),
                o.ldc);
    double worst = 0;
    for (size_t i = 0; i < C.size(); ++i) worst = std::max(worst, double(std::abs(C[i] - C32[i])));
    EXPECT_GT(worst, 1e-3);
  }
}

TEST(Gemm, Bf16RoundedFallbackMatchesDouble) {
  uint64_t seed = 200;
  for (const Case& c : cases()) {
    Operands o = make(c, seed++);
    std::vector<float> C = o.C;
    cpu::gemm_bf16_rounded(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta,
                           C.data(), o.ldc);
    expect_close(c, o, C, Prec::BF16, "bf16 rounded");
  }
}

TEST(Gemm, Bf16NativeMatmulMatchesDouble) {
  // The path CPUs with AVX512-BF16/AMX take. oneDNN may refuse bf16 matmuls on a CPU
  // without bf16 support; then there is nothing to run here.
  uint64_t seed = 300;
  for (const Case& c : cases()) {
    Operands o = make(c, seed++);
    std::vector<float> C = o.C;
    try {
      cpu::gemm_bf16_matmul(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta,
                            C.data(), o.ldc);
    } catch (const dnnl::error& e) {
      GTEST_SKIP() << "oneDNN has no bf16 matmul on this CPU (" << dnnl_isa() << "): " << e.what();
    }
    expect_close(c, o, C, Prec::BF16, "bf16 matmul");
    // Second call hits the primitive cache; same result.
    std::vector<float> C2 = o.C;
    cpu::gemm_bf16_matmul(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, c.beta,
                          C2.data(), o.ldc);
    EXPECT_EQ(C, C2);
  }
}

TEST(Gemm, BetaZeroNeverReadsC) {
  for (Prec prec : {Prec::F32, Prec::BF16}) {
    Case c{false, true, 6, 5, 4, 1.0f, 0.0f};
    Operands o = make(c, 7);
    for (auto& x : o.C) x = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> C = o.C;
    gemm<float>(c.ta, c.tb, c.M, c.N, c.K, c.alpha, o.A.data(), o.lda, o.B.data(), o.ldb, 0.0f, C.data(), o.ldc, prec);
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j) ASSERT_TRUE(std::isfinite(C[i * o.ldc + j]));
  }
}

TEST(Gemm, KZeroScalesC) {
  std::vector<float> C = {1, 2, 3, 4}, A(1), B(1);
  gemm<float>(false, false, 2, 2, 0, 1.0f, A.data(), 1, B.data(), 2, 0.5f, C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{0.5f, 1, 1.5f, 2}));
  gemm<float>(false, false, 2, 2, 0, 1.0f, A.data(), 1, B.data(), 2, 0.0f, C.data(), 2, Prec::BF16);
  EXPECT_EQ(C, (std::vector<float>{0, 0, 0, 0}));
}

TEST(Gemm, RejectsBadLeadingDimension) {
  std::vector<float> A(16), B(16), C(16);
  EXPECT_THROW(gemm<float>(false, false, 4, 4, 4, 1.0f, A.data(), 3, B.data(), 4, 0.0f, C.data(), 4), Error);
  EXPECT_THROW(gemm<float>(false, true, 4, 4, 4, 1.0f, A.data(), 4, B.data(), 4, 0.0f, C.data(), 2), Error);
}

TEST(Gemm, BatchedMatchesDouble) {
  // Small matrices (split across threads) and large ones (threaded gemm per matrix).
  for (int64_t n : {int64_t(9), int64_t(130)}) {
    for (Prec prec : {Prec::F32, Prec::BF16}) {
      const int64_t batch = 5, M = n, N = n + 1, K = n + 2, lda = K, ldb = K + 1, ldc = N;
      const int64_t sa = M * lda + 7, sb = N * ldb + 5, sc = M * ldc + 3;
      Rng rng{uint64_t(n)};
      std::vector<float> A(batch * sa), B(batch * sb), C(batch * sc);
      for (auto& x : A) x = float(rng.normal());
      for (auto& x : B) x = float(rng.normal());
      for (auto& x : C) x = float(rng.normal());
      std::vector<float> Cb = C;
      gemm_batched<float>(batch, false, true, M, N, K, 0.5f, A.data(), lda, sa, B.data(), ldb, sb, 1.0f, Cb.data(),
                          ldc, sc, prec);
      std::vector<double> Ad(A.begin(), A.end()), Bd(B.begin(), B.end()), Cd(C.begin(), C.end());
      gemm_batched<double>(batch, false, true, M, N, K, 0.5f, Ad.data(), lda, sa, Bd.data(), ldb, sb, 1.0f,
                           Cd.data(), ldc, sc, prec);
      // Same bound as above with |a|,|b| ~ N(0,1): sum |a b| <= ~K; 4x slack over the mean.
      const double tol = double(K + 4) * std::ldexp(1.0, -24) * (0.5 * 4.0 * K + 4.0);
      double worst = 0;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            const int64_t at = b * sc + i * ldc + j;
            worst = std::max(worst, std::abs(double(Cb[at]) - Cd[at]));
          }
      EXPECT_LT(worst, tol) << "n=" << n;
      // The gaps between matrices are untouched.
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t g = M * ldc; g < sc; ++g) EXPECT_EQ(Cb[b * sc + g], C[b * sc + g]);
    }
  }
}

TEST(Gemm, ReportsIsa) {
  const std::string isa = dnnl_isa();
  EXPECT_FALSE(isa.empty());
  if (isa == "avx2") {
    EXPECT_FALSE(native_bf16());
  }
}

}  // namespace
}  // namespace oc::ops
