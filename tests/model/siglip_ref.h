// SigLIP models against OpenCLIP 2.24.0 + timm 0.9.16 (tests/reference/siglip_ref.py) at a
// reduced depth with the real widths: both load the weights OpenCLIP initialized.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/fs.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc::test {

template <typename T>
std::vector<T> read_raw(const std::string& path) {
  const std::string bytes = fs::read_text(path).value();
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// The built-in config `name` with `layers` blocks in each tower (the reference wraps timm's
// create_model with depth= and sets text_cfg.layers: the same model).
inline ModelCfg siglip_at_depth(const std::string& name, int layers) {
  ModelCfg cfg = load_model_config(name);
  cfg.vision.layers = cfg.text.layers = layers;
  return cfg;
}

// The smallest cosine similarity between matching rows of a and b ([rows, E]).
inline double min_row_cosine(const std::vector<float>& a, const std::vector<float>& b, int64_t E) {
  double worst = 1;
  for (size_t r = 0; r * E < b.size(); ++r) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < E; ++i) {
      const double x = a[r * E + i], y = b[r * E + i];
      ab += x * y, aa += x * x, bb += y * y;
    }
    worst = std::min(worst, ab / std::sqrt(aa * bb));
  }
  return worst;
}

// Our unnormalized embeddings of the reference's images.f32 / tokens.i32 in `dir` with the
// weights in `weights`.
struct Embeddings {
  std::vector<float> image, text;
};
inline Embeddings encode_ref_batch(const ModelCfg& cfg, const std::string& weights, const std::string& dir, int64_t B) {
  Clip m(cfg);
  load_weights(m, weights);
  m.plan_inference(B);
  const auto images = read_raw<float>(dir + "/images.f32");
  const auto tokens = read_raw<int32_t>(dir + "/tokens.i32");
  EXPECT_EQ(images.size(), size_t(B * 3 * cfg.vision.image_size * cfg.vision.image_size));
  EXPECT_EQ(tokens.size(), size_t(B * cfg.text.context_length));
  Embeddings e{std::vector<float>(size_t(B * cfg.embed_dim)), std::vector<float>(size_t(B * cfg.embed_dim))};
  m.encode_image(images.data(), B, e.image.data(), /*normalize=*/false);
  m.encode_text(tokens.data(), B, e.text.data(), /*normalize=*/false);
  return e;
}

// siglip_ref.py run: the reference's init, batch, embeddings, gradients and losses in `dir`.
inline void run_siglip_ref(const std::string& name, int layers, int64_t B, int steps, const std::string& dir) {
  const Run r = run(pyref_python() + " " OPENCLIP_TEST_DIR "/reference/siglip_ref.py run " + name + " " +
                    std::to_string(layers) + " " + std::to_string(B) + " " + std::to_string(steps) + " " + dir);
  ASSERT_EQ(r.status, 0) << r.out;
}

}  // namespace oc::test
