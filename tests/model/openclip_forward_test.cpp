// The model forward against OpenCLIP 2.24.0's own model at random init, one config per tower
// family this project builds (plain CLIP; CLIPA-style options: no ln_pre, avg pool,
// final_ln_after_pool, last-token pool, no causal mask; LayerScale; patch dropout, inactive
// at inference): OpenCLIP initializes and saves the weights, we load them and encode the
// same images and tokens (tests/reference/openclip_ref.py forward).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/fs.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc {
namespace {

template <typename T>
std::vector<T> read_raw(const std::string& path) {
  const std::string bytes = fs::read_text(path).value();
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// max |a - b| / max |b|: fp32 with other summation orders (oneDNN / our GEMMs against
// OpenBLAS) differs by ~1e-6 of the features' scale; 1e-4 leaves room for the depth of the
// towers and fails on any real difference (a wrong pool, a missing LayerNorm: O(1)).
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < b.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i]))), m = std::max(m, double(std::fabs(b[i])));
  return d / m;
}

void expect_forward_equal(const std::string& config) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = test::fresh_dir("openclip_forward");
  auto r = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/openclip_ref.py forward " + config + " " +
                     dir);
  ASSERT_EQ(r.status, 0) << r.out;
  ModelCfg cfg = load_model_config(config);
  Clip m(cfg);
  load_weights(m, dir + "/w.pt");
  m.plan_inference(2);
  const auto images = read_raw<float>(dir + "/images.f32");
  const auto tokens = read_raw<int32_t>(dir + "/tokens.i32");
  ASSERT_EQ(images.size(), size_t(2 * 3 * cfg.vision.image_size * cfg.vision.image_size));
  ASSERT_EQ(tokens.size(), size_t(2 * cfg.text.context_length));
  std::vector<float> img(size_t(2 * cfg.embed_dim)), txt(img.size());
  m.encode_image(images.data(), 2, img.data(), /*normalize=*/false);
  m.encode_text(tokens.data(), 2, txt.data(), /*normalize=*/false);
  const double di = rel_diff(img, read_raw<float>(dir + "/image.f32"));
  const double dt = rel_diff(txt, read_raw<float>(dir + "/text.f32"));
  EXPECT_LT(di, 1e-4) << config;
  EXPECT_LT(dt, 1e-4) << config;
  std::printf("[ %s ] image %.3g text %.3g (max |diff| / max |OpenCLIP|)\n", cfg.name.c_str(), di, dt);
}

TEST(OpenClipForward, PlainClip) { expect_forward_equal(OPENCLIP_SOURCE_DIR "/configs/models/test-tiny.json"); }
TEST(OpenClipForward, ClipaOptions) { expect_forward_equal(OPENCLIP_TEST_DIR "/model/configs/tiny-clipa.json"); }
TEST(OpenClipForward, LayerScale) { expect_forward_equal(OPENCLIP_TEST_DIR "/model/configs/tiny-ls.json"); }
TEST(OpenClipForward, PatchDropoutConfigAtInference) {
  expect_forward_equal(OPENCLIP_TEST_DIR "/model/configs/tiny-pdrop.json");
}

}  // namespace
}  // namespace oc
