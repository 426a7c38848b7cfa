// Determinism: the float ops, run twice on the same inputs with the same thread count, give
// bitwise identical outputs, also when the data sits at a different address (a vectorizer
// peeling for alignment would change the summation order; so would atomics or dynamic
// schedules).
#include <cstring>

#include "ops/cpu/activation.h"
#include "ops/cpu/adamw.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/bf16_ops.h"
#include "ops/cpu/embed.h"
#include "ops/cpu/layernorm.h"
#include "ops/cpu/linear.h"
#include "ops/cpu/loss.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

// A float buffer whose data starts `shift` floats past a 64-byte boundary.
class Buf {
 public:
  Buf(const std::vector<float>& v, int shift) : store_(v.size() + 16 + 64), p_(aligned() + shift) {
    std::copy(v.begin(), v.end(), p_);
  }
  Buf(size_t n, int shift) : store_(n + 16 + 64), p_(aligned() + shift) {}
  float* data() { return p_; }
  std::vector<float> vec(size_t n) const { return std::vector<float>(p_, p_ + n); }

 private:
  float* aligned() {
    auto a = reinterpret_cast<uintptr_t>(store_.data());
    return store_.data() + ((64 - a % 64) % 64) / sizeof(float);
  }
  std::vector<float> store_;
  float* p_;
};

std::vector<float> randf(uint64_t seed, int64_t n) { Rng rng(seed); return to<float>(randn(rng, n)); }

void append(std::vector<float>& out, const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); }

// Runs `run(shift)` for shifts 0, 0, 1, 3 and requires identical bits.
template <class F>
void expect_bitwise_stable(const char* what, F run) {
  const std::vector<float> first = run(0);
  ASSERT_FALSE(first.empty());
  for (int shift : {0, 1, 3}) {
    const std::vector<float> again = run(shift);
    ASSERT_EQ(again.size(), first.size());
    EXPECT_EQ(std::memcmp(again.data(), first.data(), first.size() * sizeof(float)), 0)
        << what << " differs at shift " << shift;
  }
}

TEST(Determinism, LinearLayerNormActivation) {
  const int64_t M = 150, K = 96, N = 200;
  auto x = randf(1, M * K), w = randf(2, N * K), b = randf(3, N), dy = randf(4, M * N), lw = randf(5, K),
       lb = randf(6, K);
  expect_bitwise_stable("linear+layernorm+gelu", [&](int s) {
    Buf X(x, s), W(w, s), B(b, s), DY(dy, s), LW(lw, s), LB(lb, s);
    Buf ln(M * K, s), mean(M, s), rstd(M, s), y(M * N, s), h(M * N, s), dh(M * N, s), dln(M * K, s),
        dw(N * K, s), db(N, s), dx(M * K, s), dlw(K, s), dlb(K, s);
    std::fill_n(dw.data(), N * K, 0.0f), std::fill_n(db.data(), N, 0.0f), std::fill_n(dx.data(), M * K, 0.0f);
    std::fill_n(dlw.data(), K, 0.0f), std::fill_n(dlb.data(), K, 0.0f);
    layernorm_forward<float>(ln.data(), mean.data(), rstd.data(), X.data(), LW.data(), LB.data(), M, K, 1e-5);
    linear_forward<float>(y.data(), ln.data(), W.data(), B.data(), M, K, N);
    act_forward<float>(h.data(), y.data(), M * N, Act::Gelu);
    act_backward<float>(dh.data(), DY.data(), y.data(), M * N, Act::Gelu);
    linear_backward<float>(dln.data(), dw.data(), db.data(), dh.data(), ln.data(), W.data(), M, K, N);
    layernorm_backward<float>(dx.data(), dlw.data(), dlb.data(), dln.data(), X.data(), LW.data(), mean.data(),
                              rstd.data(), M, K);
    std::vector<float> out;
    append(out, h.vec(M * N)), append(out, dw.vec(N * K)), append(out, db.vec(N)), append(out, dx.vec(M * K));
    append(out, dlw.vec(K)), append(out, dlb.vec(K));
    return out;
  });
}

TEST(Determinism, Attention) {
  const int64_t B = 4, Tn = 50, C = 128, H = 2;
  auto qkv = randf(7, B * Tn * 3 * C), dout = randf(8, B * Tn * C);
  for (bool causal : {false, true}) {
    for (Prec prec : {Prec::F32, Prec::BF16}) {
      expect_bitwise_stable("attention", [&](int s) {
        Buf Q(qkv, s), DO(dout, s), out(B * Tn * C, s), att(B * H * Tn * Tn, s), dq(B * Tn * 3 * C, s),
            scr(B * H * Tn * Tn, s);
        attention_forward<float>(out.data(), att.data(), Q.data(), B, Tn, C, H, causal, prec);
        attention_backward<float>(dq.data(), scr.data(), DO.data(), Q.data(), att.data(), B, Tn, C, H, causal, prec);
        std::vector<float> r;
        append(r, out.vec(B * Tn * C)), append(r, dq.vec(B * Tn * 3 * C));
        return r;
      });
    }
  }
}

// The amp_bf16 block kernels (bf16 storage in a float buffer: shifts move it by 4 bytes).
TEST(Determinism, Bf16BlockKernels) {
  const int64_t M = 150, K = 96, N = 200, B = 3, Tn = 50, C = 128, H = 2;
  auto x = randf(21, M * K), w = randf(22, N * K), b = randf(23, N), dy = randf(24, M * N), lw = randf(25, K),
       lb = randf(26, K), qkv = randf(27, B * Tn * 3 * C), dout = randf(28, B * Tn * C);
  auto b16 = [](Buf& f) { return reinterpret_cast<bf16*>(f.data()); };
  expect_bitwise_stable("bf16 kernels", [&](int s) {
    Buf X(x, s), W(w, s), Bi(b, s), DY(dy, s), LW(lw, s), LB(lb, s), Q(qkv, s), DO(dout, s);
    Buf ln(M * K, s), w16(N * K, s), mean(M, s), rstd(M, s), h(M * N, s), g16(M * N, s), dh16(M * N, s), db(N, s),
        dw(N * K, s), q16(B * Tn * 3 * C, s), do16(B * Tn * C, s), o16(B * Tn * C, s), att(B * H * Tn * Tn, s),
        dq(B * Tn * 3 * C, s);
    std::fill_n(db.data(), N, 0.0f), std::fill_n(dw.data(), N * K, 0.0f);
    layernorm_forward_bf16(b16(ln), mean.data(), rstd.data(), X.data(), LW.data(), LB.data(), M, K, 1e-5);
    cast_to_bf16(b16(w16), W.data(), N * K);
    Epilogue e;
    e.bias = Bi.data();
    gemm_bf16(false, true, M, N, K, b16(ln), K, b16(w16), K, h.data(), N, e);
    act_forward_bf16(b16(g16), h.data(), M * N, Act::Gelu);
    act_backward_bf16(b16(dh16), db.data(), DY.data(), h.data(), M, N, Act::Gelu);
    Epilogue acc;
    acc.beta = 1.0f;
    gemm_bf16(true, false, N, K, M, b16(dh16), N, b16(ln), K, dw.data(), K, acc);
    cast_to_bf16(b16(q16), Q.data(), B * Tn * 3 * C);
    cast_to_bf16(b16(do16), DO.data(), B * Tn * C);
    attention_forward_bf16(b16(o16), att.data(), b16(q16), B, Tn, C, H, true);
    attention_backward_bf16(dq.data(), b16(do16), b16(q16), att.data(), B, Tn, C, H);
    std::vector<float> out;
    append(out, h.vec(M * N)), append(out, g16.vec(M * N / 2)), append(out, db.vec(N)), append(out, dw.vec(N * K));
    append(out, o16.vec(B * Tn * C / 2)), append(out, dq.vec(B * Tn * 3 * C));
    return out;
  });
}

TEST(Determinism, LossEmbedOptimizer) {
  const int64_t N = 64, E = 40, Tn = 9, V = 30, n = 70001;
  auto img = randf(9, N * E), txt = randf(10, N * E), dx = randf(11, N * Tn * E), p = randf(12, n),
       g = randf(13, n);
  std::vector<int32_t> tok(N * Tn);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = int32_t((i * 7) % V);
  expect_bitwise_stable("clip loss, token embed, adamw, sum_squares", [&](int s) {
    Buf I(img, s), T(txt, s), DX(dx, s), P(p, s), G(g, s), ni(N * E, s), nt(N * E, s), nrm(2 * N, s),
        di(N * E, s), dt(N * E, s), dia(N * E, s), dta(N * E, s), sc(2 * N * N, s), dwte(V * E, s),
        dwpe(Tn * E, s), m(n, s), v(n, s);
    std::fill_n(dwte.data(), V * E, 0.0f), std::fill_n(dwpe.data(), Tn * E, 0.0f);
    std::fill_n(m.data(), n, 0.0f), std::fill_n(v.data(), n, 0.0f);
    l2norm_forward<float>(ni.data(), nrm.data(), I.data(), N, E);
    l2norm_forward<float>(nt.data(), nrm.data() + N, T.data(), N, E);
    float ds = 0.0f;
    const double loss = clip_loss_forward_backward<float>(di.data(), dt.data(), dia.data(), dta.data(), &ds,
                                                          sc.data(), ni.data(), nt.data(), ni.data(), nt.data(),
                                                          14.2857f, N, N, E, 0);
    token_embed_backward<float>(dwte.data(), dwpe.data(), DX.data(), tok.data(), N, Tn, E, V);
    adamw_step(P.data(), G.data(), m.data(), v.data(), n, 1e-3f, 0.9f, 0.98f, 1e-6f, 0.1f, 3);
    const double ss = sum_squares(G.data(), n);
    std::vector<float> r = {float(loss), float(loss - double(float(loss))), ds, float(ss),
                            float(ss - double(float(ss)))};
    append(r, di.vec(N * E)), append(r, dta.vec(N * E)), append(r, dwte.vec(V * E)), append(r, dwpe.vec(Tn * E));
    append(r, P.vec(n));
    return r;
  });
}

}  // namespace
}  // namespace oc::ops::test
