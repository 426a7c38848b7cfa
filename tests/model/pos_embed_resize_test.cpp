// What OpenCLIP's load_checkpoint does to pretrained weights that do not fit the model:
// resize_pos_embed / resize_text_pos_embed (against OpenCLIP 2.24.0's own functions,
// tests/reference/pretrained_ref.py resize-pos) and the zero logit_bias for --siglip on a
// CLIP checkpoint, through load_weights.
#include "model/pos_embed_resize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/fs.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc {
namespace {

HostTensor read_tensor(const std::string& path, Shape shape) {
  const std::string bytes = fs::read_text(path).value();
  HostTensor t(DType::F32, std::move(shape));
  EXPECT_EQ(bytes.size(), size_t(t.numel()) * 4) << path;
  std::memcpy(t.f32(), bytes.data(), std::min(bytes.size(), size_t(t.numel()) * 4));
  return t;
}

// max |a - b|: the weights are sums of <= 16 products of O(1) values, in double here and in
// float in torch: ~1e-6; a wrong filter (a = -0.75, no antialias, clamped borders) or an
// off-by-half centre differs by O(0.1).
double max_diff(const HostTensor& a, const HostTensor& b) {
  EXPECT_EQ(a.shape, b.shape);
  double d = 0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i)
    d = std::max(d, double(std::fabs(a.f32()[i] - b.f32()[i])));
  return d;
}

TEST(PosEmbedResize, AsOpenClipResizePosEmbedAndResizeTextPosEmbed) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = test::fresh_dir("pos_resize");
  auto r = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/pretrained_ref.py resize-pos " + dir);
  ASSERT_EQ(r.status, 0) << r.out;
  const HostTensor vis = read_tensor(dir + "/vis_in.f32", {50, 16});
  for (int g : {3, 4, 10, 16}) {  // down and up: antialias changes both (PIL's a = -0.5 filter)
    const HostTensor want = read_tensor(dir + "/vis_" + std::to_string(g) + ".f32", {1 + g * g, 16});
    const HostTensor got = resize_pos_embed(vis, g, "visual.positional_embedding");
    EXPECT_LT(max_diff(got, want), 1e-5) << "grid 7 -> " << g;
    EXPECT_EQ(std::memcmp(got.f32(), vis.f32(), 16 * 4), 0) << "the class token's row is kept as it is";
  }
  const HostTensor txt = read_tensor(dir + "/txt_in.f32", {16, 8});
  for (int n : {5, 10, 24, 77}) {
    const HostTensor want = read_tensor(dir + "/txt_" + std::to_string(n) + ".f32", {n, 8});
    EXPECT_LT(max_diff(resize_text_pos_embed(txt, n), want), 1e-5) << "16 -> " << n;
  }
  HostTensor odd(DType::F32, {1 + 7 * 7 + 1, 16});
  EXPECT_THROW(resize_pos_embed(odd, 4, "visual.positional_embedding"), Error);
}

// A 32 px checkpoint into a 48 px model with a 24-token context and a SigLIP logit_bias:
// what train --pretrained W --force-image-size 48 --force-context-length 24 --siglip builds.
TEST(PosEmbedResize, LoadWeightsAdaptsAsLoadCheckpoint) {
  const std::string dir = test::fresh_dir("pos_resize_load");
  ModelCfg base = load_model_config(OPENCLIP_SOURCE_DIR "/configs/models/test-tiny.json");
  Clip src(base);
  src.init(11);
  save_weights(src, dir + "/w.safetensors");
  ModelCfg big = base;
  big.vision.image_size = 48;
  big.text.context_length = 24;
  use_siglip_init(big);
  Clip dst(big);
  dst.init(12);
  load_weights(dst, dir + "/w.safetensors");
  const NamedTensors in = state_dict_copy(src), out = state_dict_copy(dst);
  auto get = [](const NamedTensors& sd, const std::string& k) -> const HostTensor& {
    for (auto& [n, t] : sd)
      if (n == k) return t;
    throw std::runtime_error("no " + k);
  };
  EXPECT_EQ(get(out, "logit_bias").f32()[0], 0.0f);  // zeros_like(logit_scale), not init_logit_bias -10
  EXPECT_EQ(max_diff(get(out, "visual.positional_embedding"),
                     resize_pos_embed(get(in, "visual.positional_embedding"), 6, "v")),
            0.0);
  EXPECT_EQ(max_diff(get(out, "positional_embedding"), resize_text_pos_embed(get(in, "positional_embedding"), 24)),
            0.0);
  EXPECT_EQ(max_diff(get(out, "visual.conv1.weight"), get(in, "visual.conv1.weight")), 0.0);
  // Without --siglip the file's logit_scale alone loads, as before.
  ModelCfg plain = big;
  plain.init_logit_bias.reset();
  Clip p(plain);
  EXPECT_NO_THROW(load_weights(p, dir + "/w.safetensors"));
}

}  // namespace
}  // namespace oc
