// Inference on a backend whose memory the host cannot touch (tests/guarded_backend.h): the
// image batch and the token ids arrive as host arrays; the vision tower uploads the images
// (copy_from_host) before im2patches, and the guard checks that every op gets backend memory.
// The features are bitwise those of `cpu` (the same kernels).
#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"
#include "guarded_backend.h"
#include "model/clip.h"
#include "model/config.h"

namespace oc {
namespace {

struct Features {
  std::vector<float> image, text;
};

Features encode(ops::Backend& be) {
  const ModelCfg cfg = load_model_config("test-tiny");
  Clip m(cfg, be);
  m.init(5);
  const int64_t B = 3, S = cfg.vision.image_size, ctx = cfg.text.context_length, E = cfg.embed_dim;
  m.plan_inference(B);
  Rng rng(13);
  std::vector<float> images(size_t(B * 3 * S * S));
  for (float& x : images) x = float(rng.normal());
  std::vector<int32_t> tokens(size_t(B * ctx), 0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < 4 + b; ++t) tokens[size_t(b * ctx + t)] = int32_t(1 + rng.below(100));
    tokens[size_t(b * ctx + 4 + b)] = int32_t(cfg.text.vocab_size - 1);  // end of text
  }
  Features f{std::vector<float>(size_t(B * E)), std::vector<float>(size_t(B * E))};
  m.encode_image(images.data(), B, f.image.data());
  m.encode_text(tokens.data(), B, f.text.data());
  return f;
}

TEST(GuardedEncode, HostBatchesAreUploadedAndFeaturesMatchCpu) {
  const Features g = encode(test::guarded()), c = encode(ops::backend("cpu"));
  EXPECT_EQ(g.image, c.image);
  EXPECT_EQ(g.text, c.text);
}

}  // namespace
}  // namespace oc
