// The OpenCLIP tower options beyond the golden tests: patch dropout's own draws (training
// forwards only, distinct patches, deterministic per seed, fresh per forward, uniform), and
// amp_bf16 on the option configs (LayerScale's bf16 block path).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "core/check.h"
#include "core/rng.h"
#include "model/clip.h"
#include "model/vit/vit_tower.h"
#include "step/contrastive_step.h"
#include "synthetic_batch.h"

namespace oc {
namespace {

std::string cfg_path(const char* name) { return std::string(OPENCLIP_TEST_DIR "/model/configs/") + name + ".json"; }

using Batch = test::SyntheticBatch;

Batch make_batch(const ModelCfg& c, int64_t B, uint64_t seed) {
  return test::synthetic_batch(c, B, seed, c.text.context_length - 3);
}

TEST(PatchDropout, DefaultDrawIsAUniformRandomSubset) {
  const int64_t B = 3, Np = 16, K = VisionTower::patches_kept(Np, 0.5);
  EXPECT_EQ(K, 8);
  EXPECT_EQ(VisionTower::patches_kept(10, 0.75), 2);  // int(2.5): Python truncates
  EXPECT_EQ(VisionTower::patches_kept(3, 0.9), 1);    // at least one patch
  std::vector<int32_t> a(size_t(B * K)), b(a.size());
  VisionTower::random_patch_keep(7, B, Np, K, a.data());
  VisionTower::random_patch_keep(7, B, Np, K, b.data());
  EXPECT_EQ(a, b) << "same seed, same patches";
  VisionTower::random_patch_keep(8, B, Np, K, b.data());
  EXPECT_NE(a, b);
  for (int64_t s = 0; s < B; ++s) {
    std::set<int32_t> u(a.begin() + s * K, a.begin() + (s + 1) * K);
    EXPECT_EQ(int64_t(u.size()), K) << "distinct patches";
    EXPECT_TRUE(*u.begin() >= 0 && *u.rbegin() < Np);
  }
  // Every patch is kept with probability K/Np: over 4000 draws of 3 samples the count of
  // each patch is Binomial(12000, 0.5): mean 6000, sd 55; 6 sd = 330.
  std::vector<int> count(size_t(Np), 0);
  for (uint64_t d = 0; d < 4000; ++d) {
    VisionTower::random_patch_keep(d, B, Np, K, a.data());
    for (int32_t i : a) ++count[size_t(i)];
  }
  for (int c : count) EXPECT_NEAR(c, 6000, 330);
}

TEST(PatchDropout, OnlyTheTrainingForwardDropsAndRunsRepeat) {
  ModelCfg c = load_model_config(cfg_path("tiny-pdrop"));
  const int64_t B = 4, E = c.embed_dim;
  Batch b = make_batch(c, B, 3);
  double loss[2][2];
  for (int run = 0; run < 2; ++run) {
    Clip m(c);
    m.init(5);
    m.plan_training(B);
    ContrastiveStep step(m, B);
    loss[run][0] = step.forward_backward(b.images.data(), b.tokens.data(), B);
    EXPECT_EQ(m.vision_tower().tokens_used(), 1 + 8);
    loss[run][1] = step.forward_backward(b.images.data(), b.tokens.data(), B);
    std::vector<float> f1(size_t(B * E)), f2(f1.size());
    m.encode_image(b.images.data(), B, f1.data());
    EXPECT_EQ(m.vision_tower().tokens_used(), c.vision.tokens()) << "encode_image keeps every patch (eval mode)";
    m.encode_image(b.images.data(), B, f2.data());
    EXPECT_EQ(f1, f2);
  }
  EXPECT_EQ(loss[0][0], loss[1][0]) << "the draws follow the init seed";
  EXPECT_EQ(loss[0][1], loss[1][1]);
  EXPECT_NE(loss[0][0], loss[0][1]) << "each forward draws new patches";
}

// amp_bf16 against fp32 on the option configs: within bf16's scale (the same bounds as
// Golden.AmpBf16DistanceFromFp32BesideTorchAutocast on test-tiny: 2^-5 on features and
// loss, 2^-2 on any gradient tensor relative to its scale; measured 2026-12 on the Xeon: loss
// 4e-3 / 5e-4 / 9e-4, worst gradient 2.3e-2 / 2.2e-2 / 2.5e-2); a wrong LayerScale in the bf16
// block (unscaled branch, missing gamma gradient) is an O(1) error. With LayerScale the
// gamma gradients are checked by name.
void check_bf16_near_fp32(const std::string& path) {
  ModelCfg c = load_model_config(path);
  const int64_t B = 4;
  Batch b = make_batch(c, B, 9);
  std::vector<float> grads[2];
  double loss[2];
  Clip* first = nullptr;
  std::vector<std::unique_ptr<Clip>> models;
  for (int bf = 0; bf < 2; ++bf) {
    models.push_back(std::make_unique<Clip>(c));
    Clip& m = *models.back();
    m.init(1);
    if (bf) m.set_precision(Precision::AmpBf16);
    m.plan_training(B);
    ContrastiveStep step(m, B);
    loss[bf] = step.forward_backward(b.images.data(), b.tokens.data(), B);
    grads[bf].assign(m.grads(), m.grads() + m.table().total);
    if (!first) first = &m;
  }
  EXPECT_NEAR(loss[1], loss[0], loss[0] / 32) << path;
  int gammas = 0;
  double worst = 0;
  for (auto& p : first->table().params) {
    double d = 0, s = 1e-6;
    for (size_t i = 0; i < p.numel; ++i)
      d = std::max(d, double(std::fabs(grads[1][p.offset + i] - grads[0][p.offset + i]))),
      s = std::max(s, double(std::fabs(grads[0][p.offset + i])));
    EXPECT_LE(d / s, 0.25) << path << " " << p.name;
    worst = std::max(worst, d / s);
    if (p.name.find(".gamma") != std::string::npos) {
      ++gammas;
      EXPECT_GT(s, 1e-5) << p.name << " has a gradient";
    }
  }
  std::printf("[amp_bf16 vs fp32] %s: loss %.2e, worst gradient %.2e\n", c.name.c_str(),
              std::fabs(loss[1] - loss[0]) / loss[0], worst);
  if (c.vision.ls_init_value) {
    EXPECT_EQ(gammas, 2 * (c.vision.layers + c.text.layers));
  }
}

TEST(Options, AmpBf16NearFp32) {
  for (const char* n : {"tiny-ls", "tiny-clipa", "tiny-pdrop"}) check_bf16_near_fp32(cfg_path(n));
}

TEST(Options, BpeIdsForAWordPieceModelNameTheTokenizer) {
  // CLIP's BPE ids (start 49406) reaching a -CLIPA text tower (vocabulary 32000, here 1000),
  // e.g. from a library caller that tokenized with the wrong tokenizer, say why.
  ModelCfg c = load_model_config(cfg_path("tiny-clipa"));
  Clip m(c);
  m.init(0);
  m.plan_inference(1);
  std::vector<int32_t> row(size_t(c.text.context_length), 0);
  row[0] = 49406, row[1] = 49407;
  std::vector<float> out(size_t(c.embed_dim));
  try {
    m.encode_text(row.data(), 1, out.data());
    ADD_FAILURE() << "out-of-vocabulary ids were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bert-base-uncased (WordPiece)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oc
