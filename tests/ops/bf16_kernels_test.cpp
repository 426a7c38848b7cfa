// The amp_bf16 kernels (ops/bf16_gemm.h, ops/bf16_ops.h, attention_*_bf16, conv2d with
// Prec::BF16) against the double
// reference path: gemm<double> / attention<double> with Prec::BF16 round every GEMM operand
// to bf16 and accumulate in double, which is exactly the arithmetic these kernels promise
// (bf16 operands, fp32 accumulation, everything else fp32). Each GEMM and conv runs on both paths:
// native bf16 (oneDNN matmul; skipped on CPUs without AVX512-BF16/AMX) and the fallback
// that widens to fp32 for sgemm (what AVX2-only CPUs run).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/machine.h"
#include "ops/cpu/activation.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/conv.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/bf16_ops.h"
#include "ops/cpu/gemm.h"
#include "ops/dnnl_info.h"
#include "ops/cpu/layernorm.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

std::vector<bf16> to_b16(const std::vector<double>& v) {
  std::vector<bf16> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = to_bf16(float(v[i]));
  return r;
}
std::vector<double> widen(const std::vector<bf16>& v) {
  std::vector<double> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) r[i] = to_f32(v[i]);
  return r;
}

enum class Path { Native, Fallback };

// Selects the path for the scope of a test; native is skipped where the CPU lacks bf16.
class Bf16Path : public ::testing::TestWithParam<Path> {
 protected:
  void SetUp() override {
    if (GetParam() == Path::Native && !native_bf16())
      GTEST_SKIP() << "no native bf16 on this CPU (oneDNN ISA " << dnnl_isa() << ")";
    cpu::set_bf16_gemm_fallback(GetParam() == Path::Fallback);
    cpu::set_bf16_gemm_native(GetParam() == Path::Native);
  }
  void TearDown() override {
    cpu::set_bf16_gemm_fallback(false);
    cpu::set_bf16_gemm_native(false);
  }
};

struct GemmCase {
  bool ta, tb;
  int64_t M, N, K;
  bool bias, act;
  float beta;
};

TEST_P(Bf16Path, GemmMatchesDouble) {
  const GemmCase cases[] = {
      {false, true, 37, 29, 71, true, false, 0.0f}, {false, false, 64, 130, 50, false, false, 1.0f},
      {true, false, 96, 40, 150, false, false, 1.0f}, {true, true, 20, 33, 17, true, true, 0.0f},
      {false, true, 150, 200, 64, true, true, 0.0f},  // threaded, the MLP's GELU epilogue
      // Past the fallback's 1024-row blocks: of C's rows, and (A transposed) of the reduction.
      {false, true, 2100, 20, 24, true, true, 0.0f}, {true, false, 24, 20, 2100, false, false, 1.0f},
      {true, true, 30, 18, 1500, true, false, 0.0f},
  };
  uint64_t seed = 1;
  for (const GemmCase& c : cases) {
    for (bool out_bf16 : {false, true}) {
      if (out_bf16 && c.beta != 0.0f) continue;
      for (Act act : {Act::Gelu, Act::QuickGelu, Act::GeluTanh}) {
        if (!c.act && act != Act::Gelu) continue;
        Rng rng(seed++);
        const int64_t a_cols = c.ta ? c.M : c.K, b_cols = c.tb ? c.K : c.N;
        const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = c.N + 2;  // padded strides
        auto A16 = to_b16(randn(rng, (c.ta ? c.K : c.M) * lda));
        auto B16 = to_b16(randn(rng, (c.tb ? c.N : c.K) * ldb));
        auto bias = randn(rng, c.N);
        auto C0 = randn(rng, c.M * ldc);
        // Reference: double products of the same bf16 values, then bias, beta, activation.
        std::vector<double> A = widen(A16), B = widen(B16), ref = C0;
        gemm<double>(c.ta, c.tb, c.M, c.N, c.K, 1.0f, A.data(), lda, B.data(), ldb, c.beta, ref.data(), ldc);
        for (int64_t i = 0; i < c.M; ++i)
          for (int64_t j = 0; j < c.N; ++j) {
            double& r = ref[i * ldc + j];
            if (c.bias) r += double(float(bias[j]));
            if (c.act) act_forward<double>(&r, &r, 1, act);
          }
        Epilogue e;
        std::vector<float> biasf = to<float>(bias);
        if (c.bias) e.bias = biasf.data();
        e.beta = c.beta, e.act = c.act, e.act_fn = act;
        std::vector<double> got(C0.size());
        if (out_bf16) {
          std::vector<bf16> C(C0.size(), bf16{0x7fc0});
          gemm_bf16(c.ta, c.tb, c.M, c.N, c.K, A16.data(), lda, B16.data(), ldb, C.data(), ldc, e);
          got = widen(C);
        } else {
          std::vector<float> C = to<float>(C0);
          gemm_bf16(c.ta, c.tb, c.M, c.N, c.K, A16.data(), lda, B16.data(), ldb, C.data(), ldc, e);
          got.assign(C.begin(), C.end());
          // The padding of C is never written.
          for (int64_t i = 0; i < c.M; ++i)
            for (int64_t j = c.N; j < ldc; ++j) ASSERT_EQ(C[i * ldc + j], float(C0[i * ldc + j]));
        }
        // fp32 accumulation of K products of O(1) values: error <= ~K * 2^-24 * sum|a b| ~ 1e-4
        // here; the activation's fp32 approximations add ~1e-6; a bf16 output adds half an
        // ulp, 2^-9 relative. A wrong term or stride is off by O(1).
        const double rtol = out_bf16 ? 1.0 / 256 : 1e-5;
        for (int64_t i = 0; i < c.M; ++i)
          for (int64_t j = 0; j < c.N; ++j) {
            const double r = ref[i * ldc + j], g = got[i * ldc + j];
            ASSERT_LE(std::abs(g - r), 2e-4 * std::sqrt(double(c.K)) + rtol * std::abs(r))
                << "ta=" << c.ta << " tb=" << c.tb << " M=" << c.M << " N=" << c.N << " K=" << c.K
                << " bf16 out=" << out_bf16 << " act=" << c.act << " at (" << i << "," << j << ")";
          }
      }
    }
  }
}

TEST_P(Bf16Path, GemmKZeroIsEpilogueOfZero) {
  std::vector<float> bias = {1.0f, -2.0f, 0.5f}, C = {4, 4, 4, 4, 4, 4};
  Epilogue e;
  e.bias = bias.data(), e.beta = 0.5f;
  gemm_bf16(false, true, 2, 3, 0, nullptr, 1, nullptr, 1, C.data(), 3, e);
  EXPECT_EQ(C, (std::vector<float>{3, 0, 2.5f, 3, 0, 2.5f}));
}

// A prepared weight (prepare_weight_bf16) is what GEMMs read as B until it is prepared again
// or released: same results as the plain weight, and a GEMM that reads W differently (another
// N, a stride, no transpose) still reads the plain W.
TEST_P(Bf16Path, PreparedWeightIsReadUntilPreparedAgainOrReleased) {
  const int64_t M = 150, N = 200, K = 96;
  Rng rng(77);
  auto A = to_b16(randn(rng, M * K));
  auto W = to_b16(randn(rng, N * K));
  const auto Wpos = W;
  auto Wneg = W;
  for (bf16& w : Wneg) w.bits ^= 0x8000;  // -W exactly
  auto run = [&](int64_t n) {
    std::vector<float> C(size_t(M * n));
    gemm_bf16(false, true, M, n, K, A.data(), K, W.data(), K, C.data(), n);
    return C;
  };
  const std::vector<float> plain = run(N), plain_half = run(N / 2);
  const int64_t before = cpu::prepared_weight_count();
  prepare_weight_bf16(W.data(), N, K);
  const bool packs = GetParam() == Path::Native;  // the fallback reads W itself
  if (packs) {
    EXPECT_EQ(cpu::prepared_weight_count(), before + 1);
  }
  // Same products, fp32 accumulation: within the tolerance of GemmMatchesDouble (in practice
  // bitwise, the same AMX kernel over the same K blocks).
  const std::vector<float> prepared = run(N);
  for (size_t i = 0; i < plain.size(); ++i) ASSERT_NEAR(prepared[i], plain[i], 2e-4 * std::sqrt(double(K))) << i;
  // N / 2 rows of W are another GEMM: the plain W, not the prepared [N, K] copy.
  EXPECT_EQ(run(N / 2), plain_half);
  // Written without preparing again: the prepared copy is still read (the contract).
  std::copy(Wneg.begin(), Wneg.end(), W.begin());  // in place: the same pointer
  const std::vector<float> stale = run(N);
  if (packs) {
    EXPECT_EQ(stale, prepared);
  } else {
    EXPECT_NE(stale, prepared);
  }
  // Prepared again: the new values (-W: every result negated exactly).
  prepare_weight_bf16(W.data(), N, K);
  const std::vector<float> neg = run(N);
  for (size_t i = 0; i < neg.size(); ++i) ASSERT_EQ(neg[i], -prepared[i]) << i;
  // Released: the plain W is read again.
  release_weight_bf16(W.data());
  EXPECT_EQ(cpu::prepared_weight_count(), before);
  std::copy(Wpos.begin(), Wpos.end(), W.begin());
  EXPECT_EQ(run(N), plain);
}

// conv2d with Prec::BF16 (the three directions) against conv2d<double> on the same bf16 values:
// oneDNN's bf16 convolutions on the native path (where oneDNN has an optimised bf16 kernel for
// the shape), the fp32 ones on operands rounded to bf16 on the fallback. Shapes: the backend
// suite's (RN50's stem, a Bottleneck 3x3 and 1x1, an odd one that strided windows do not tile).
TEST_P(Bf16Path, Conv2dMatchesDouble) {
  const ConvShape shapes[] = {{2, 32, 32, 3, 16, 3, 2, 1},
                              {2, 14, 14, 64, 64, 3, 1, 1},
                              {2, 7, 7, 128, 256, 1, 1, 0},
                              {3, 5, 7, 5, 6, 3, 2, 1}};
  uint64_t seed = 100;
  for (const ConvShape& s : shapes) {
    Rng rng(seed++);
    auto x = randn(rng, s.in_size()), w = randn(rng, s.weight_size()), dy = randn(rng, s.out_size());
    auto dw0 = randn(rng, s.weight_size());
    std::vector<double> y(s.out_size()), dx(s.in_size()), dw = dw0;
    conv2d_forward<double>(y.data(), x.data(), w.data(), s, Prec::BF16);
    conv2d_backward_data<double>(dx.data(), dy.data(), w.data(), s, Prec::BF16);
    conv2d_backward_weights<double>(dw.data(), dy.data(), x.data(), s, Prec::BF16);
    std::vector<float> xf = to<float>(x), wf = to<float>(w), dyf = to<float>(dy), dwf = to<float>(dw0);
    std::vector<float> yf(y.size()), dxf(dx.size());
    conv2d_forward<float>(yf.data(), xf.data(), wf.data(), s, Prec::BF16);
    conv2d_backward_data<float>(dxf.data(), dyf.data(), wf.data(), s, Prec::BF16);
    conv2d_backward_weights<float>(dwf.data(), dyf.data(), xf.data(), s, Prec::BF16);
    // Exact products of the same bf16 values, summed in fp32 in another order than in double:
    // n terms of O(1) values give sums of O(sqrt n) and an error of ~n 2^-24 (below 1e-4 for the
    // n <= 1568 terms here: K*K*C, K*K*OC, N*OH*OW); atol 2e-4 sqrt(n) as the GEMM test above.
    // A wrong tap, channel or layout is off by O(1).
    const double n_fwd = double(s.K * s.K * s.C), n_bwd = double(s.K * s.K * s.OC), n_w = double(s.N * s.OH() * s.OW());
    const std::string where = fmt::format("N={} H={} W={} C={} OC={} K={} stride={}", s.N, s.H, s.W, s.C, s.OC, s.K,
                                          s.stride);
    EXPECT_LT(max_scaled_err(yf, y, 2e-4 * std::sqrt(n_fwd), 1e-5), 1.0) << "forward " << where;
    EXPECT_LT(max_scaled_err(dxf, dx, 2e-4 * std::sqrt(n_bwd), 1e-5), 1.0) << "backward data " << where;
    EXPECT_LT(max_scaled_err(dwf, dw, 2e-4 * std::sqrt(n_w), 1e-5), 1.0) << "backward weights " << where;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, Bf16Path, ::testing::Values(Path::Native, Path::Fallback),
                         [](const auto& i) { return i.param == Path::Native ? "Native" : "Fallback"; });

// |got - ref| within one bf16 ulp of ref (the kernel rounds an fp32 value that is itself
// within ~1e-6 of ref, so it can land on either neighbour of a value near a rounding tie).
void expect_bf16_of(const std::vector<bf16>& got, const std::vector<double>& ref, const char* what) {
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    const double ulp = std::ldexp(std::abs(ref[i]) + 1e-30, -7);
    ASSERT_LE(std::abs(double(to_f32(got[i])) - ref[i]), ulp) << what << " at " << i;
  }
}

TEST(Bf16Ops, LayerNormMatchesDouble) {
  const int64_t N = 70, C = 96;
  Rng rng(11);
  auto x = randn(rng, N * C, 3.0), w = randn(rng, C), b = randn(rng, C), x0 = randn(rng, N * C);
  std::vector<double> out(N * C), mean(N), rstd(N);
  layernorm_forward<double>(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
  auto xf = to<float>(x), wf = to<float>(w), bf = to<float>(b);
  std::vector<bf16> o16(N * C);
  std::vector<float> m(N), r(N);
  layernorm_forward_bf16(o16.data(), m.data(), r.data(), xf.data(), wf.data(), bf.data(), N, C, 1e-5);
  expect_bf16_of(o16, out, "layernorm");
  // fp32 statistics against double: C = 96 terms summed in fp32 err by ~C * 2^-24 = 6e-6
  // relative; 1e-5 is that bound, far below a wrong eps or divisor (~1e-2).
  for (int64_t i = 0; i < N; ++i) {
    EXPECT_NEAR(m[i], mean[i], 1e-5 * (1 + std::abs(mean[i])));
    EXPECT_NEAR(r[i], rstd[i], 1e-5 * rstd[i]);
  }
  // Residual add + LayerNorm: xm = x0 + x exactly as the float add, then the same LayerNorm.
  std::vector<double> xm(N * C);
  for (size_t i = 0; i < xm.size(); ++i) xm[i] = double(float(x0[i]) + xf[i]);
  layernorm_forward<double>(out.data(), mean.data(), rstd.data(), xm.data(), w.data(), b.data(), N, C, 1e-5);
  std::vector<float> xmf = to<float>(x0);
  add_layernorm_forward_bf16(xmf.data(), o16.data(), m.data(), r.data(), xf.data(), wf.data(), bf.data(), N, C, 1e-5);
  for (size_t i = 0; i < xm.size(); ++i) ASSERT_EQ(double(xmf[i]), xm[i]);
  expect_bf16_of(o16, out, "residual+layernorm");
}

TEST(Bf16Ops, ActivationAndBiasGradMatchFloatOps) {
  const int64_t M = 33, N = 200;
  Rng rng(12);
  auto h = to<float>(randn(rng, M * N, 2.0)), dout = to<float>(randn(rng, M * N));
  for (Act act : {Act::Gelu, Act::QuickGelu, Act::GeluTanh}) {
    // Forward: bitwise the float op, rounded.
    std::vector<float> g(M * N);
    std::vector<bf16> g16(M * N);
    act_forward<float>(g.data(), h.data(), M * N, act);
    act_forward_bf16(g16.data(), h.data(), M * N, act);
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(g16[i].bits, to_bf16(g[i]).bits) << i;
    // Backward: dh bitwise the float op, rounded; dbias the fp32 column sums of dh.
    std::vector<float> dh(M * N), dbias(N, 0.25f);
    std::vector<bf16> dh16(M * N);
    act_backward<float>(dh.data(), dout.data(), h.data(), M * N, act);
    act_backward_bf16(dh16.data(), dbias.data(), dout.data(), h.data(), M, N, act);
    for (size_t i = 0; i < dh.size(); ++i) ASSERT_EQ(dh16[i].bits, to_bf16(dh[i]).bits) << i;
    for (int64_t j = 0; j < N; ++j) {
      double s = 0.25, mag = 0;
      for (int64_t i = 0; i < M; ++i) s += dh[i * N + j], mag += std::abs(dh[i * N + j]);
      EXPECT_NEAR(dbias[j], s, double(M) * 6e-8 * mag + 1e-7) << j;  // M fp32 additions
    }
    // The fused MLP backward entry: both outputs bitwise the float ops, rounded; the same
    // column sums (same order: rows per thread, threads in order).
    std::vector<float> dbias2(N, 0.25f);
    std::vector<bf16> a16(M * N), dh16b(M * N);
    act_value_grad_bf16(a16.data(), dh16b.data(), dbias2.data(), dout.data(), h.data(), M, N, act);
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(a16[i].bits, g16[i].bits) << i;
    for (size_t i = 0; i < dh.size(); ++i) ASSERT_EQ(dh16b[i].bits, dh16[i].bits) << i;
    EXPECT_EQ(dbias2, dbias);
  }
  std::vector<float> dbias(N, 0.0f);
  std::vector<bf16> d16(M * N);
  bias_grad_to_bf16(d16.data(), dbias.data(), dout.data(), M, N);
  for (size_t i = 0; i < dout.size(); ++i) ASSERT_EQ(d16[i].bits, to_bf16(dout[i]).bits);
  for (int64_t j = 0; j < N; ++j) {
    double s = 0, mag = 0;
    for (int64_t i = 0; i < M; ++i) s += dout[i * N + j], mag += std::abs(dout[i * N + j]);
    // An fp32 sum of M terms errs by at most ~M * 2^-24 (6e-8) of the sum of magnitudes.
    EXPECT_NEAR(dbias[j], s, double(M) * 6e-8 * mag) << j;
  }
  bias_grad_to_bf16(d16.data(), nullptr, dout.data(), M, N);  // no bias: conversion only
}

// Where the CPU has AMX the kernel under test is the AMX one, else where it has AVX-512 the
// AVX-512 one; the others it can run are forced in later passes (the sgemm fallback is the
// AVX2-only CPUs' kernel). AMX also needs Linux to grant the tile state, which a kernel
// without AMX support refuses: then "avx512".
TEST(Bf16Ops, AttentionKernelDispatch) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  const MachineInfo m = machine_info();
  const std::string k = cpu::attention_bf16_kernel();
  if (avx512 && m.amx_tile && m.amx_bf16)
    EXPECT_TRUE(k == "amx" || k == "avx512") << k;
  else
    EXPECT_EQ(k, avx512 ? "avx512" : "sgemm");
  cpu::set_attention_bf16_amx(false);
  EXPECT_STREQ(cpu::attention_bf16_kernel(), avx512 ? "avx512" : "sgemm");
  cpu::set_attention_bf16_amx(true);
  cpu::set_attention_bf16_fallback(true);
  EXPECT_STREQ(cpu::attention_bf16_kernel(), "sgemm");
  cpu::set_attention_bf16_fallback(false);
}

// Every kernel this CPU can run: the default, AVX-512 where AMX is the default, the fallback.
struct KernelPass {
  bool fallback, amx;
};
std::vector<KernelPass> kernel_passes() {
  std::vector<KernelPass> v{{false, true}};
  if (std::string(cpu::attention_bf16_kernel()) == "amx") v.push_back({false, false});
  v.push_back({true, true});
  return v;
}

void check_attention_bf16(int64_t B, int64_t Tn, int64_t C, int64_t H, bool causal) {
  Rng rng(uint64_t(13 + Tn + causal + C));
  auto qkv16 = to_b16(randn(rng, B * Tn * 3 * C));
  auto do16 = to_b16(randn(rng, B * Tn * C));
  std::vector<double> qkv = widen(qkv16), dout = widen(do16);
  std::vector<double> out(B * Tn * C), att(B * H * Tn * Tn), dqkv(B * Tn * 3 * C), scr(B * H * Tn * Tn);
  attention_forward<double>(out.data(), att.data(), qkv.data(), B, Tn, C, H, causal, Prec::BF16);
  attention_backward<double>(dqkv.data(), scr.data(), dout.data(), qkv.data(), att.data(), B, Tn, C, H, causal,
                             Prec::BF16);
  for (const KernelPass pass : kernel_passes()) {
    cpu::set_attention_bf16_fallback(pass.fallback);
    cpu::set_attention_bf16_amx(pass.amx);
    const std::string kernel = cpu::attention_bf16_kernel();
    std::vector<bf16> o16(B * Tn * C);
    std::vector<float> attf(B * H * Tn * Tn), dq(B * Tn * 3 * C);
    attention_forward_bf16(o16.data(), attf.data(), qkv16.data(), B, Tn, C, H, causal);
    attention_backward_bf16(dq.data(), do16.data(), qkv16.data(), attf.data(), B, Tn, C, H);
    cpu::set_attention_bf16_fallback(false);
    cpu::set_attention_bf16_amx(true);
    const std::string where = fmt::format("{} T={} C={} H={} causal={}", kernel, Tn, C, H, causal);
    // Probabilities in fp32: ~1e-6. Outputs: P and dS are rounded to bf16 inside, and an fp32
    // value a hair from a rounding tie may round the other way than the double one: a few
    // terms off by 2^-8 relative, so 2e-2 absolute on O(1..8) sums; a wrong head, stride or
    // missing term is off by O(1). (The kernels differ only in the order of their fp32 sums,
    // AMX's tiles also in flushing subnormal products to zero: below 2^-126, none here.)
    EXPECT_LT(max_scaled_err(attf, att, 1e-6, 1e-5), 1.0) << "att " << where;
    EXPECT_LT(max_scaled_err(widen(o16), out, 2e-2, 1e-2), 1.0) << "out " << where;
    EXPECT_LT(max_scaled_err(dq, dqkv, 2e-2, 1e-2), 1.0) << "dqkv " << where;
  }
}

// ViT-B-32's head size 64 at 50 and 17 tokens, the text tower's 77 (a second 64-column tile),
// and odd head sizes (7: a pair padded with zero; 24: not a multiple of 16).
TEST(Bf16Ops, AttentionMatchesDoubleBf16Reference) {
  for (bool causal : {false, true}) {
    for (int64_t Tn : {50, 17}) check_attention_bf16(3, Tn, 128, 2, causal);
    check_attention_bf16(2, 77, 128, 2, causal);
    check_attention_bf16(2, 9, 21, 3, causal);
    check_attention_bf16(1, 70, 48, 2, causal);
    check_attention_bf16(1, 197, 160, 2, causal);  // ViT-B-16's tokens, ViT-H's head size 80
  }
}

}  // namespace
}  // namespace oc::ops::test
