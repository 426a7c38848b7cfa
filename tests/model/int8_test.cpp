// --precision int8 inference (model/block_int8.h, ops/gemm_int8.h): embeddings close to fp32's,
// the families without an int8 path refused by name, training refused, and a CPU without VNNI
// falling back (OPENCLIP_INT8=off) to what it can run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/rng.h"
#include "model/clip.h"
#include "model/config.h"
#include "normal_floats.h"
#include "ops/gemm_int8.h"
#include "ops/registry.h"

namespace oc {
namespace {

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

struct Embeddings {
  std::vector<float> image, text;
};

Embeddings encode(Clip& model, Precision p, int64_t B) {
  model.set_precision(p);
  model.plan_inference(B);
  const ModelCfg& cfg = model.cfg();
  const int S = cfg.vision.image_size, ctx = cfg.text.context_length;
  const auto img = test::normal_floats(size_t(B * 3 * S * S), 11);
  std::vector<int32_t> tok(size_t(B * ctx), 0);
  Rng rng(12);
  for (int64_t b = 0; b < B; ++b) {
    const int len = 3 + int(b % 5);
    for (int t = 0; t < len; ++t)
      tok[size_t(b * ctx + t)] = 1 + int(rng.next_u64() % uint64_t(cfg.text.vocab_size - 2));
    tok[size_t(b * ctx + len)] = cfg.text.vocab_size - 1;  // the end of text (the largest id)
  }
  Embeddings e{std::vector<float>(size_t(B * cfg.embed_dim)), std::vector<float>(size_t(B * cfg.embed_dim))};
  model.encode_image(img.data(), B, e.image.data());
  model.encode_text(tok.data(), B, e.text.data());
  return e;
}

TEST(Int8Inference, EmbeddingsCloseToFp32) {
  if (!ops::has_int8(ops::backend("cpu"))) GTEST_SKIP() << "this CPU has no VNNI: int8 falls back (tested below)";
  Clip model(load_model_config("test-tiny"), ops::backend("cpu"));
  model.init(3);
  const int64_t B = 6, E = model.cfg().embed_dim;
  const Embeddings f = encode(model, Precision::Fp32, B);
  const Embeddings q = encode(model, Precision::Int8, B);
  ASSERT_EQ(model.precision(), Precision::Int8);
  for (int64_t b = 0; b < B; ++b) {
    // 8-bit weights and activations (relative step 1/254 of each row's range) on every block
    // GEMM of a small random-init model: measured 0.9997-0.9999; 0.995 leaves room for other
    // CPUs' rounding while still failing on any wrong scale (a wrong scale or layout gives
    // cosines far below 0.9).
    EXPECT_GT(cosine(f.image.data() + b * E, q.image.data() + b * E, E), 0.995) << "image " << b;
    EXPECT_GT(cosine(f.text.data() + b * E, q.text.data() + b * E, E), 0.995) << "text " << b;
  }
  // Weights written after the first encode are quantized again (a stale copy would repeat q).
  float* p = model.params();
  for (size_t i = 0; i < model.table().total; ++i) p[i] *= 0.9f;
  const Embeddings q2 = encode(model, Precision::Int8, B);
  EXPECT_NE(q.image, q2.image);
}

TEST(Int8Inference, FamiliesWithoutAnInt8PathAndTrainingAreRefused) {
  auto expect_error = [](auto f, const std::string& part) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one naming " << part;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  {
    Clip rn(load_model_config(OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json"), ops::backend("cpu"));
    expect_error([&] { rn.set_precision(Precision::Int8); }, "ModifiedResNet");
  }
  {
    Clip siglip(load_model_config("ViT-B-16-SigLIP"), ops::backend("cpu"));
    expect_error([&] { siglip.set_precision(Precision::Int8); }, "timm");
  }
  if (!ops::has_int8(ops::backend("cpu"))) return;
  Clip model(load_model_config("test-tiny"), ops::backend("cpu"));
  model.set_precision(Precision::Int8);
  expect_error([&] { model.plan_training(2); }, "inference only");
}

TEST(Int8Inference, WithoutVnniFallsBackWithTheSameEmbeddingsAsTheFallback) {
  ::setenv("OPENCLIP_INT8", "off", 1);
  Clip model(load_model_config("test-tiny"), ops::backend("cpu"));
  model.init(5);
  const Embeddings q = encode(model, Precision::Int8, 3);
  const Precision ran = model.precision();
  ::unsetenv("OPENCLIP_INT8");
  EXPECT_NE(ran, Precision::Int8);
  const Embeddings f = encode(model, ran, 3);
  EXPECT_EQ(q.image, f.image);
  EXPECT_EQ(q.text, f.text);
}

}  // namespace
}  // namespace oc
