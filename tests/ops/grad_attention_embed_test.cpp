// Finite-difference gradient checks (double) of attention, cross attention and the embedding ops.
#include <fmt/format.h>

#include "core/check.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/cross_attention.h"
#include "ops/cpu/embed.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

void check_attention(bool causal) {
  Rng rng(causal ? 11 : 12);
  const int64_t B = 2, Tn = 5, C = 8, H = 2;
  auto qkv = randn(rng, B * Tn * 3 * C), R = randn(rng, B * Tn * C);
  std::vector<double> out(B * Tn * C), att(B * H * Tn * Tn);
  auto loss = [&] {
    attention_forward<double>(out.data(), att.data(), qkv.data(), B, Tn, C, H, causal);
    return dot(out, R);
  };
  loss();
  std::vector<double> dqkv(qkv.size(), 99.0), scratch(B * H * Tn * Tn);
  attention_backward<double>(dqkv.data(), scratch.data(), R.data(), qkv.data(), att.data(), B, Tn, C, H, causal);
  expect_grad(causal ? "attention causal dqkv" : "attention dqkv", qkv, dqkv, loss);

  // Rows of att are distributions; the causal ones put no mass on future keys.
  for (int64_t r = 0; r < B * H * Tn; ++r) {
    double s = 0;
    for (int64_t j = 0; j < Tn; ++j) {
      s += att[r * Tn + j];
      if (causal && j > r % Tn) {
        EXPECT_EQ(att[r * Tn + j], 0.0);
      }
    }
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
}

TEST(GradCheck, Attention) { check_attention(false); }
TEST(GradCheck, AttentionCausal) { check_attention(true); }

// Cross attention with the layouts the model uses: q rows padded (ldq > C, the padding must
// stay untouched), k and v interleaved in one [B,Tk,2C] buffer (a fused kv projection).
void check_cross_attention(int64_t Tq, int64_t Tk) {
  Rng rng(uint64_t(100 + 10 * Tq + Tk));
  const int64_t B = 2, C = 8, H = 2, ldq = C + 3, ldkv = 2 * C;
  auto q = randn(rng, B * Tq * ldq), kv = randn(rng, B * Tk * ldkv), R = randn(rng, B * Tq * C);
  std::vector<double> out(B * Tq * C), att(B * H * Tq * Tk);
  auto loss = [&] {
    cross_attention_forward<double>(out.data(), att.data(), q.data(), kv.data(), kv.data() + C, ldq, ldkv, ldkv, B, Tq,
                                    Tk, C, H);
    return dot(out, R);
  };
  loss();
  std::vector<double> dq(q.size(), 99.0), dkv(kv.size(), 99.0), scratch(att.size());
  cross_attention_backward<double>(dq.data(), dkv.data(), dkv.data() + C, scratch.data(), R.data(), q.data(),
                                   kv.data(), kv.data() + C, att.data(), ldq, ldkv, ldkv, B, Tq, Tk, C, H);
  for (int64_t r = 0; r < B * Tq; ++r)
    for (int64_t c = C; c < ldq; ++c) {
      EXPECT_EQ(dq[size_t(r * ldq + c)], 99.0) << "padding of dq written at row " << r;
      dq[size_t(r * ldq + c)] = 0.0;  // the loss does not read it: its numeric gradient is 0
    }
  const std::string tag = fmt::format(" Tq={} Tk={}", Tq, Tk);
  expect_grad("cross attention dq" + tag, q, dq, loss);
  expect_grad("cross attention dk, dv" + tag, kv, dkv, loss);
  for (int64_t r = 0; r < B * H * Tq; ++r) {  // rows of att are distributions over all keys
    double s = 0;
    for (int64_t j = 0; j < Tk; ++j) s += att[size_t(r * Tk + j)];
    EXPECT_NEAR(s, 1.0, 1e-12);
  }
}

TEST(GradCheck, CrossAttentionOneQuery) { check_cross_attention(1, 7); }
TEST(GradCheck, CrossAttentionQueries) { check_cross_attention(3, 5); }
TEST(GradCheck, CrossAttentionMoreQueriesThanKeys) { check_cross_attention(4, 1); }

TEST(GradCheck, VitEmbed) {
  Rng rng(13);
  const int64_t B = 3, Np = 4, C = 5;
  auto patch = randn(rng, B * Np * C), cls = randn(rng, C), pos = randn(rng, (Np + 1) * C);
  auto R = randn(rng, B * (Np + 1) * C);
  std::vector<double> x(R.size());
  auto loss = [&] {
    vit_embed_forward<double>(x.data(), patch.data(), cls.data(), pos.data(), B, Np, C);
    return dot(x, R);
  };
  std::vector<double> dpatch(patch.size(), 5.0), dcls(C, 0.0), dpos(pos.size(), 0.0);
  vit_embed_backward<double>(dpatch.data(), dcls.data(), dpos.data(), R.data(), B, Np, C);
  expect_grad("vit_embed dpatch", patch, dpatch, loss);
  expect_grad("vit_embed dcls", cls, dcls, loss);
  expect_grad("vit_embed dpos", pos, dpos, loss);
}

TEST(GradCheck, TokenEmbed) {
  Rng rng(14);
  const int64_t B = 2, Tn = 4, C = 3, V = 6, Tmax = 5;  // wpe has more rows than used
  std::vector<int32_t> tokens = {1, 5, 1, 0, 5, 5, 2, 1};  // repeats: the scatter must add
  auto wte = randn(rng, V * C), wpe = randn(rng, Tmax * C), R = randn(rng, B * Tn * C);
  std::vector<double> x(R.size());
  auto loss = [&] {
    token_embed_forward<double>(x.data(), tokens.data(), wte.data(), wpe.data(), B, Tn, C, V);
    return dot(x, R);
  };
  std::vector<double> dwte(wte.size(), 0.0), dwpe(wpe.size(), 0.0);
  token_embed_backward<double>(dwte.data(), dwpe.data(), R.data(), tokens.data(), B, Tn, C, V);
  expect_grad("token_embed dwte", wte, dwte, loss);
  expect_grad("token_embed dwpe", wpe, dwpe, loss);

  std::vector<int32_t> bad = tokens;
  bad[3] = int32_t(V);
  EXPECT_THROW(token_embed_forward<double>(x.data(), bad.data(), wte.data(), wpe.data(), B, Tn, C, V), Error);
}

TEST(GradCheck, GatherRows) {
  Rng rng(15);
  const int64_t B = 3, Tn = 4, C = 5;
  std::vector<int32_t> idx = {3, 0, 2};
  auto inp = randn(rng, B * Tn * C), R = randn(rng, B * C);
  std::vector<double> out(B * C);
  auto loss = [&] {
    gather_rows_forward<double>(out.data(), inp.data(), idx.data(), B, Tn, C);
    return dot(out, R);
  };
  std::vector<double> dinp(inp.size(), 0.0);
  gather_rows_backward<double>(dinp.data(), R.data(), idx.data(), B, Tn, C);
  expect_grad("gather_rows dinp", inp, dinp, loss);
}

TEST(Embed, Im2PatchesMatchesConvLayout) {
  // patches[b*G*G + gy*G + gx, (c*P + ky)*P + kx] = img[b, c, gy*P + ky, gx*P + kx]
  const int64_t B = 2, S = 6, P = 3, G = S / P;
  std::vector<double> img(B * 3 * S * S);
  for (size_t i = 0; i < img.size(); ++i) img[i] = double(i);
  std::vector<double> patches(B * G * G * 3 * P * P);
  im2patches<double>(patches.data(), img.data(), B, S, P);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t gy = 0; gy < G; ++gy)
      for (int64_t gx = 0; gx < G; ++gx)
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t ky = 0; ky < P; ++ky)
            for (int64_t kx = 0; kx < P; ++kx)
              ASSERT_EQ(patches[((b * G + gy) * G + gx) * 3 * P * P + (c * P + ky) * P + kx],
                        img[((b * 3 + c) * S + gy * P + ky) * S + gx * P + kx]);
}

}  // namespace
}  // namespace oc::ops::test
