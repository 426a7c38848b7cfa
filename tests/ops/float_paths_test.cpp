// The float kernels against the double instantiation on the same (float-representable)
// inputs: the vectorized exp/Phi, softmax, reductions and fused loops that only the float
// path runs. Tolerances are a few fp32 ulps times the op's condition, stated per test.
#include "ops/cpu/activation.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/vec_math.h"
#include "ops/cpu/embed.h"
#include "ops/cpu/layernorm.h"
#include "ops/cpu/linear.h"
#include "ops/cpu/loss.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

// Inputs rounded to float once, so both instantiations see identical values.
std::vector<double> randn_f(Rng& rng, int64_t n, double scale = 1.0) {
  auto v = randn(rng, n, scale);
  for (auto& x : v) x = double(float(x));
  return v;
}

TEST(FloatPath, ExpMatchesLibm) {
  // Cephes expf: <= 2 ulp on the reduced range; exactly 0 below -87.3, NaN stays NaN.
  std::vector<float> x, y;
  for (double t = -87.0; t <= 88.0; t += 0.01) x.push_back(float(t));
  x.push_back(-200.0f);
  x.push_back(-INFINITY);
  y.resize(x.size());
  cpu::exp_array(y.data(), x.data(), int64_t(x.size()));
  double worst = 0;
  for (size_t i = 0; i + 2 < x.size(); ++i) {
    const double ref = std::exp(double(x[i]));
    worst = std::max(worst, std::abs(y[i] - ref) / ref);
  }
  EXPECT_LT(worst, 2.5e-7);  // 2 ulp of float (2^-23 = 1.19e-7)
  EXPECT_EQ(y[y.size() - 2], 0.0f);
  EXPECT_EQ(y.back(), 0.0f);
  float nan = NAN, out = 0;
  cpu::exp_array(&out, &nan, 1);
  EXPECT_TRUE(std::isnan(out));
}

void check_act_float(Act act) {
  // Dense sweep over [-12, 12] (both tails) plus a non-multiple-of-8 length for the tail path.
  std::vector<double> xd;
  for (double t = -12.0; t <= 12.0; t += 0.003) xd.push_back(double(float(t)));
  xd.push_back(1e-20);
  const int64_t n = int64_t(xd.size());
  std::vector<float> xf = to<float>(xd), yf(n), gf(n), ones(n, 1.0f);
  std::vector<double> yd(n), gd(n), onesd(n, 1.0);
  act_forward<float>(yf.data(), xf.data(), n, act);
  act_forward<double>(yd.data(), xd.data(), n, act);
  act_backward<float>(gf.data(), ones.data(), xf.data(), n, act);
  act_backward<double>(gd.data(), onesd.data(), xd.data(), n, act);
  // Forward: relative 1e-6 (erfcc's 1.2e-7 plus a few float roundings), with an absolute
  // floor for the far negative tail where float underflows (|y| < 1e-30). QuickGELU also
  // rounds 1.702 x before exp (as torch's float `x * sigmoid(1.702 * x)` does), which costs
  // |1.702 x| ulps relative in the negative tail; GELU-tanh likewise rounds its gate
  // z = x (a + b x^2) in three steps before exp: 3 ulps of |z| relative.
  for (int64_t i = 0; i < n; ++i) {
    const double x = xd[i], z = x * (1.5957691216057307 + 0.0713548162726 * x * x);
    const double rtol = 1e-6 + (act == Act::QuickGelu  ? 1.702 * std::abs(x) * 1.2e-7
                                : act == Act::GeluTanh ? std::abs(z) * 3.6e-7
                                                       : 0.0);
    ASSERT_LE(std::abs(yf[i] - yd[i]), 1e-30 + rtol * std::abs(yd[i])) << "x = " << xd[i];
  }
  // Derivative: it crosses zero near x = -0.75, so absolute: 5e-7 is ~4 ulp of its largest
  // values (1.13); measured 1.8e-7 (GELU) and 1.6e-7 (QuickGELU).
  EXPECT_LE(max_scaled_err(gf, gd, 5e-7, 0.0), 1.0);
}

TEST(FloatPath, Gelu) { check_act_float(Act::Gelu); }
TEST(FloatPath, QuickGelu) { check_act_float(Act::QuickGelu); }
TEST(FloatPath, GeluTanh) { check_act_float(Act::GeluTanh); }

TEST(FloatPath, LayerNorm) {
  Rng rng(31);
  const int64_t N = 7, C = 768;
  auto x = randn_f(rng, N * C, 3.0), w = randn_f(rng, C), b = randn_f(rng, C), dy = randn_f(rng, N * C);
  for (auto& v : x) v = double(float(v + 2.0));
  std::vector<double> y(N * C), mean(N), rstd(N), dx(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_forward<double>(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
  layernorm_backward<double>(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(),
                             rstd.data(), N, C);
  auto xf = to<float>(x), wf = to<float>(w), bf = to<float>(b), dyf = to<float>(dy);
  std::vector<float> yf(N * C), meanf(N), rstdf(N), dxf(N * C, 0.0f), dwf(C, 0.0f), dbf(C, 0.0f);
  layernorm_forward<float>(yf.data(), meanf.data(), rstdf.data(), xf.data(), wf.data(), bf.data(), N, C, 1e-5);
  layernorm_backward<float>(dxf.data(), dwf.data(), dbf.data(), dyf.data(), xf.data(), wf.data(), meanf.data(),
                            rstdf.data(), N, C);
  // Sums over C = 768 in fp32: error ~ sqrt(C) u * |terms| ~ 1e-5 on O(1..10) values.
  EXPECT_LE(max_scaled_err(yf, y, 1e-5, 1e-5), 1.0);
  EXPECT_LE(max_scaled_err(dxf, dx, 1e-5, 1e-5), 1.0);
  EXPECT_LE(max_scaled_err(dwf, dw, 1e-5, 1e-5), 1.0);
  EXPECT_LE(max_scaled_err(dbf, db, 1e-5, 1e-5), 1.0);
}

void check_attention_float(bool causal, Prec prec) {
  Rng rng(causal ? 32 : 33);
  const int64_t B = 3, Tn = 13, C = 64, H = 4;  // D = 16, Tn not a multiple of 8
  auto qkv = randn_f(rng, B * Tn * 3 * C), dout = randn_f(rng, B * Tn * C);
  std::vector<double> out(B * Tn * C), att(B * H * Tn * Tn), dqkv(qkv.size()), scratch(att.size());
  attention_forward<double>(out.data(), att.data(), qkv.data(), B, Tn, C, H, causal, prec);
  attention_backward<double>(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, Tn, C, H, causal,
                             prec);
  auto qkvf = to<float>(qkv), doutf = to<float>(dout);
  std::vector<float> outf(out.size()), attf(att.size()), dqkvf(dqkv.size()), scratchf(att.size());
  attention_forward<float>(outf.data(), attf.data(), qkvf.data(), B, Tn, C, H, causal, prec);
  attention_backward<float>(dqkvf.data(), scratchf.data(), doutf.data(), qkvf.data(), attf.data(), B, Tn, C, H,
                            causal, prec);
  // F32: O(1) values from sums of <= 16 products: 1e-5 is ~100 ulp of headroom.
  // BF16: the double path rounds the same gemm inputs, but P (and dS) are computed in each
  // type before being rounded to bf16, so a 1-ulp float difference can flip a bf16 rounding:
  // one bf16 ulp (2^-8 = 4e-3) relative on a few terms.
  const double tol = prec == Prec::F32 ? 1e-5 : 2e-2;
  EXPECT_LE(max_scaled_err(outf, out, tol, tol), 1.0);
  EXPECT_LE(max_scaled_err(attf, att, tol, tol), 1.0);
  EXPECT_LE(max_scaled_err(dqkvf, dqkv, tol, tol), 1.0);
}

TEST(FloatPath, Attention) { check_attention_float(false, Prec::F32); }
TEST(FloatPath, AttentionCausal) { check_attention_float(true, Prec::F32); }
TEST(FloatPath, AttentionBf16) { check_attention_float(false, Prec::BF16); }
TEST(FloatPath, AttentionCausalBf16) { check_attention_float(true, Prec::BF16); }

TEST(FloatPath, LinearWithBias) {
  Rng rng(34);
  const int64_t M = 33, K = 70, N = 300;  // N spans several 64-column bias blocks
  auto x = randn_f(rng, M * K), w = randn_f(rng, N * K), b = randn_f(rng, N), dy = randn_f(rng, M * N);
  std::vector<double> y(M * N), dx(M * K), dw(N * K, 0.0), db(N, 0.0);
  linear_forward<double>(y.data(), x.data(), w.data(), b.data(), M, K, N);
  linear_backward<double>(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), M, K, N);
  auto xf = to<float>(x), wf = to<float>(w), bf = to<float>(b), dyf = to<float>(dy);
  std::vector<float> yf(M * N), dxf(M * K), dwf(N * K, 0.0f), dbf(N, 0.0f);
  linear_forward<float>(yf.data(), xf.data(), wf.data(), bf.data(), M, K, N);
  linear_backward<float>(dxf.data(), dwf.data(), dbf.data(), dyf.data(), xf.data(), wf.data(), M, K, N);
  // Sums of <= 300 N(0,1) products (size ~ sqrt(300) = 17): K u |terms| ~ 1e-4 absolute.
  EXPECT_LE(max_scaled_err(yf, y, 1e-4, 1e-5), 1.0);
  EXPECT_LE(max_scaled_err(dxf, dx, 1e-4, 1e-5), 1.0);
  EXPECT_LE(max_scaled_err(dwf, dw, 1e-4, 1e-5), 1.0);
  EXPECT_LE(max_scaled_err(dbf, db, 1e-4, 1e-5), 1.0);
}

TEST(FloatPath, ClipLossAndL2Norm) {
  Rng rng(35);
  const int64_t N = 40, E = 32;
  auto img = randn_f(rng, N * E), txt = randn_f(rng, N * E), g = randn_f(rng, N * E);
  std::vector<double> ni(N * E), nt(N * E), normi(N), normt(N), di(N * E), dt(N * E), dia(N * E), dta(N * E),
      sc(2 * N * N), ds = {0.0}, dl2(N * E);
  l2norm_forward<double>(ni.data(), normi.data(), img.data(), N, E);
  l2norm_forward<double>(nt.data(), normt.data(), txt.data(), N, E);
  l2norm_backward<double>(dl2.data(), g.data(), ni.data(), normi.data(), N, E);
  const double L = clip_loss_forward_backward<double>(di.data(), dt.data(), dia.data(), dta.data(), ds.data(),
                                                      sc.data(), ni.data(), nt.data(), ni.data(), nt.data(),
                                                      1.0 / 0.07, N, N, E, 0);
  auto imgf = to<float>(img), txtf = to<float>(txt), gf = to<float>(g);
  std::vector<float> nif(N * E), ntf(N * E), normif(N), normtf(N), dif(N * E), dtf(N * E), diaf(N * E),
      dtaf(N * E), scf(2 * N * N), dsf = {0.0f}, dl2f(N * E);
  l2norm_forward<float>(nif.data(), normif.data(), imgf.data(), N, E);
  l2norm_forward<float>(ntf.data(), normtf.data(), txtf.data(), N, E);
  l2norm_backward<float>(dl2f.data(), gf.data(), nif.data(), normif.data(), N, E);
  const double Lf = clip_loss_forward_backward<float>(dif.data(), dtf.data(), diaf.data(), dtaf.data(), dsf.data(),
                                                      scf.data(), nif.data(), ntf.data(), nif.data(), ntf.data(),
                                                      float(1.0 / 0.07), N, N, E, 0);
  // Unit vectors: products and norms carry a few ulp; logits are 14x that (scale 14.3).
  EXPECT_LE(max_scaled_err(nif, ni, 1e-6, 1e-6), 1.0);
  EXPECT_LE(max_scaled_err(dl2f, dl2, 1e-6, 1e-5), 1.0);
  EXPECT_NEAR(Lf, L, 1e-5 * std::abs(L));
  EXPECT_LE(max_scaled_err(dif, di, 1e-6, 1e-4), 1.0);
  EXPECT_LE(max_scaled_err(dtaf, dta, 1e-6, 1e-4), 1.0);
  EXPECT_NEAR(dsf[0], ds[0], 1e-5);
}

TEST(FloatPath, Embeddings) {
  // Pure copies and adds: the float results equal the double ones rounded to float.
  Rng rng(36);
  const int64_t B = 4, Tn = 9, C = 70, V = 11;
  std::vector<int32_t> tok(B * Tn);
  for (auto& t : tok) t = int32_t(rng.below(V));
  auto dx = randn_f(rng, B * Tn * C);
  std::vector<double> dwte(V * C, 0.0), dwpe(Tn * C, 0.0);
  token_embed_backward<double>(dwte.data(), dwpe.data(), dx.data(), tok.data(), B, Tn, C, V);
  auto dxf = to<float>(dx);
  std::vector<float> dwtef(V * C, 0.0f), dwpef(Tn * C, 0.0f);
  token_embed_backward<float>(dwtef.data(), dwpef.data(), dxf.data(), tok.data(), B, Tn, C, V);
  EXPECT_LE(max_scaled_err(dwtef, dwte, 1e-6, 1e-6), 1.0);
  EXPECT_LE(max_scaled_err(dwpef, dwpe, 1e-6, 1e-6), 1.0);
}

}  // namespace
}  // namespace oc::ops::test
