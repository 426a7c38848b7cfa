// Whole-model checks on the small test config: the text-tower truncation is exact, runs are
// bitwise deterministic, inference equals the training forward, and the gradient agrees
// with a finite-difference directional derivative of the loss.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/rng.h"
#include "model/clip.h"
#include "model/transformer.h"
#include "step/contrastive_step.h"
#include "synthetic_batch.h"

namespace oc {
namespace {

using Batch = test::SyntheticBatch;

// Short captions (up to half the context): the text tower's truncation matters.
Batch make_batch(const ModelCfg& c, int64_t B, uint64_t seed) {
  return test::synthetic_batch(c, B, seed, c.text.context_length / 2);
}

TEST(Clip, TextTruncationIsExact) {
  ModelCfg c = load_model_config("test-tiny");
  const int64_t B = 4, E = c.embed_dim;
  Batch b = make_batch(c, B, 1);
  std::vector<float> feats[2], grads[2];
  int64_t used[2];
  for (int full = 0; full < 2; ++full) {
    Clip m(c);
    m.init(0);
    m.plan_training(B);
    m.text_tower().set_full_context(full == 1);
    ContrastiveStep step(m, B);
    step.forward_backward(b.images.data(), b.tokens.data(), B);
    used[full] = m.text_tower().tokens_used();
    feats[full].resize(size_t(B * E));
    m.encode_text(b.tokens.data(), B, feats[full].data());
    grads[full].assign(m.grads(), m.grads() + m.table().total);
  }
  EXPECT_LT(used[0], c.text.context_length);
  EXPECT_EQ(used[1], c.text.context_length);
  // Positions after the last end-of-text token are masked out of every pooled query by the
  // causal mask, so results must agree to rounding (the reduction order inside attention's
  // softmax sums changes with T: allow a few ulps).
  for (size_t i = 0; i < feats[0].size(); ++i) EXPECT_NEAR(feats[0][i], feats[1][i], 1e-6) << i;
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < grads[0].size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs(grads[0][i] - grads[1][i])));
    max_abs = std::max(max_abs, double(std::fabs(grads[1][i])));
  }
  EXPECT_LE(max_diff, 1e-5 * max_abs) << "gradients differ between truncated and full context";
}

TEST(Clip, TwoRunsAreBitwiseEqual) {
  ModelCfg c = load_model_config("test-tiny");
  const int64_t B = 6;
  Batch b = make_batch(c, B, 2);
  std::vector<float> out[2];
  double loss[2];
  for (int r = 0; r < 2; ++r) {
    Clip m(c);
    m.init(7);
    m.plan_training(B);
    ContrastiveStep step(m, B);
    loss[r] = step.forward_backward(b.images.data(), b.tokens.data(), B);
    out[r].assign(m.grads(), m.grads() + m.table().total);
  }
  EXPECT_EQ(loss[0], loss[1]);
  EXPECT_EQ(0, std::memcmp(out[0].data(), out[1].data(), out[0].size() * sizeof(float)));
}

TEST(Clip, GradCheckpointingGivesIdenticalGradients) {
  ModelCfg c = load_model_config("test-tiny");
  const int64_t B = 4;
  Batch b = make_batch(c, B, 8);
  std::vector<float> g[2];
  double loss[2];
  double mib[2];
  for (int ck = 0; ck < 2; ++ck) {
    Clip m(c);
    m.init(8);
    m.plan_training(B, ck == 1);
    ContrastiveStep step(m, B);
    loss[ck] = step.forward_backward(b.images.data(), b.tokens.data(), B);
    g[ck].assign(m.grads(), m.grads() + m.table().total);
    mib[ck] = m.memory().activations;
  }
  // Recomputation runs the same kernels on the same inputs: bitwise equal.
  EXPECT_EQ(loss[0], loss[1]);
  EXPECT_EQ(0, std::memcmp(g[0].data(), g[1].data(), g[0].size() * sizeof(float)));
  (void)mib;
  // Memory: with 12 layers per tower only block inputs are kept (planned, no forward run).
  ModelCfg big = load_model_config("ViT-B-32");
  Clip full(big), ck(big);
  full.plan_training(8, false);
  ck.plan_training(8, true);
  EXPECT_LT(ck.memory().activations, 0.4 * full.memory().activations)
      << ck.memory().activations << " MiB vs " << full.memory().activations;
}

TEST(Clip, InferenceMatchesTrainingForward) {
  ModelCfg c = load_model_config("test-tiny");
  const int64_t B = 5, E = c.embed_dim;
  Batch b = make_batch(c, B, 3);
  Clip train(c), infer(c);
  train.init(3);
  infer.init(3);
  train.plan_training(B);
  infer.plan_inference(2);  // chunks of 2, 2, 1
  Clip::Features f = train.forward(b.images.data(), b.tokens.data(), B);
  std::vector<float> img(size_t(B * E)), txt(size_t(B * E));
  infer.encode_image(b.images.data(), B, img.data());
  infer.encode_text(b.tokens.data(), B, txt.data());
  for (int64_t i = 0; i < B * E; ++i) {
    EXPECT_NEAR(img[size_t(i)], f.image[i], 1e-6);
    EXPECT_NEAR(txt[size_t(i)], f.text[i], 1e-6);
  }
}

TEST(Clip, AmpBf16CheckpointingInferenceAndWeightRefresh) {
  ModelCfg c = load_model_config("test-tiny");
  const int64_t B = 4, E = c.embed_dim;
  Batch b = make_batch(c, B, 9);
  // Checkpointing recomputes with the same bf16 kernels: bitwise equal gradients.
  std::vector<float> g[2];
  std::vector<float> feat;
  for (int ck = 0; ck < 2; ++ck) {
    Clip m(c);
    m.init(9);
    m.set_precision(Precision::AmpBf16);
    m.plan_training(B, ck == 1);
    ContrastiveStep step(m, B);
    step.forward_backward(b.images.data(), b.tokens.data(), B);
    g[ck].assign(m.grads(), m.grads() + m.table().total);
    if (ck == 0) {
      Clip::Features f = m.forward(b.images.data(), b.tokens.data(), B);
      feat.assign(f.image, f.image + B * E);
    }
  }
  EXPECT_EQ(0, std::memcmp(g[0].data(), g[1].data(), g[0].size() * sizeof(float)));
  // Inference runs c_fc's GELU in oneDNN's GEMM epilogue (its own fp32 erf) where training
  // runs ours: a few activations round to the neighbouring bf16 value, which moves the
  // unit-norm features by ~1e-4; a wrong kernel moves them by O(0.1).
  Clip infer(c);
  infer.init(9);
  infer.set_precision(Precision::AmpBf16);
  infer.plan_inference(3);
  std::vector<float> img(size_t(B * E));
  infer.encode_image(b.images.data(), B, img.data());
  for (int64_t i = 0; i < B * E; ++i) EXPECT_NEAR(img[size_t(i)], feat[size_t(i)], 2e-3) << i;
  // Writing weights through params() refreshes their bf16 copies before the next encode.
  const ParamInfo* fc = infer.table().find("visual.transformer.resblocks.0.mlp.c_fc.weight");
  ASSERT_NE(fc, nullptr);
  std::fill_n(infer.params() + fc->offset, fc->numel, 0.0f);
  std::vector<float> img2(size_t(B * E)), img3(size_t(B * E));
  infer.encode_image(b.images.data(), B, img2.data());
  Clip fresh(c);
  fresh.init(9);
  std::fill_n(fresh.params() + fc->offset, fc->numel, 0.0f);
  fresh.set_precision(Precision::AmpBf16);
  fresh.plan_inference(3);
  fresh.encode_image(b.images.data(), B, img3.data());
  EXPECT_NE(img2, img);
  EXPECT_EQ(img2, img3);
}

TEST(StackMemory, Bf16TrainingDoesNotKeepAttentionResidualOrMlpPreactivation) {
  // amp_bf16 training keeps per layer only x, the LayerNorm statistics and bf16 q/k/v and
  // attention output; att, xm and h are recomputed in backward (block_bf16.cpp). Checked
  // against the fp32 plan, which keeps them all in fp32: the difference must cover them
  // (plus half of qkv and ao) less the bf16 scratch the bf16 plan adds.
  const int64_t B = 8, T = 50, W = 64, H = 4, F = 256, L = 4, bt = B * T;
  StackMemory f32, b16;
  f32.plan(B, T, W, H, F, L, /*training=*/true, false, /*bf16_acts=*/false);
  b16.plan(B, T, W, H, F, L, /*training=*/true, false, /*bf16_acts=*/true);
  const double kept = double(L) * double(B * H * T * T + bt * W + bt * F + (4 * bt * W) / 2);  // floats
  const double scratch16 = double(bt * std::max(3 * W, F) + bt * F + 2 * bt * W) / 2;       // floats
  const double mib = 4.0 / (1 << 20);
  EXPECT_LE(b16.mib(), f32.mib() - (kept - scratch16) * mib + 0.01);
  // Inference keeps one layer's slot either way.
  StackMemory i16;
  i16.plan(B, T, W, H, F, L, /*training=*/false, false, /*bf16_acts=*/true);
  EXPECT_LT(i16.mib(), b16.mib());
}

TEST(Clip, GradientMatchesDirectionalFiniteDifference) {
  ModelCfg c = load_model_config("test-tiny");
  const int64_t B = 4;
  Batch b = make_batch(c, B, 4);
  Clip m(c);
  m.init(4);
  m.plan_training(B);
  ContrastiveStep step(m, B);
  step.forward_backward(b.images.data(), b.tokens.data(), B);
  std::vector<float> grad(m.grads(), m.grads() + m.table().total);
  std::vector<float> theta(m.params(), m.params() + m.table().total);
  // Check each parameter tensor along a random direction: (L(t+hv) - L(t-hv)) / 2h vs g.v.
  Rng rng(5);
  int checked = 0;
  for (auto& p : m.table().params) {
    std::vector<float> v(p.numel);
    for (auto& x : v) x = float(rng.normal());
    double gv = 0, vv = 0;
    for (size_t i = 0; i < p.numel; ++i) gv += double(grad[p.offset + i]) * v[i], vv += double(v[i]) * v[i];
    // Per-element step 1% of the tensor's scale (at least 1e-4): small enough for the central difference
    // to be accurate, large enough that float rounding of the loss does not dominate.
    double ss = 0;
    for (size_t i = 0; i < p.numel; ++i) ss += double(theta[p.offset + i]) * theta[p.offset + i];
    const double scale = std::max(std::sqrt(ss / double(p.numel)), 0.01);
    const double h = 1e-2 * scale / std::sqrt(vv / double(p.numel));
    auto loss_at = [&](double s) {
      std::memcpy(m.params(), theta.data(), theta.size() * sizeof(float));
      for (size_t i = 0; i < p.numel; ++i) m.params()[p.offset + i] += float(s * v[i]);
      return step.forward_backward(b.images.data(), b.tokens.data(), B);
    };
    const double fd = (loss_at(h) - loss_at(-h)) / (2 * h);
    // The forward runs in float: the loss carries ~1e-7 absolute rounding noise, which the
    // central difference divides by 2h (the absolute term); its truncation error is O(h^2),
    // about 1e-4 relative for a 1% perturbation (the 2% relative term leaves room for it).
    EXPECT_NEAR(fd, gv, 0.02 * std::fabs(gv) + 1e-6 / h) << p.name;
    ++checked;
  }
  EXPECT_EQ(checked, int(m.table().params.size()));
}

TEST(Clip, OutOfVocabularyTokenIsAnError) {
  ModelCfg c = load_model_config("test-tiny");
  Clip m(c);
  m.plan_inference(1);
  std::vector<int32_t> tok(size_t(c.text.context_length), 0);
  tok[1] = c.text.vocab_size;  // one past the end
  std::vector<float> out(size_t(c.embed_dim));
  try {
    m.encode_text(tok.data(), 1, out.data());
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oc
