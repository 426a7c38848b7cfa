// --aug-cfg color_jitter / gray_scale against torchvision's ColorJitter and Grayscale(3) on
// fixed parameters (bit for bit: Pillow's integer arithmetic), and their parsing.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/rng.h"
#include "image/color_jitter.h"
#include "image/test_images.h"
#include "image/transform.h"
#include "test_util.h"

namespace oc {
namespace {

struct JitterCase {
  std::array<int, 4> order;
  std::array<std::optional<double>, 4> factors;
  bool gray;
};

std::string encode(const JitterCase& c) {
  std::string s;
  for (int o : c.order) s += char('0' + o);
  for (const auto& f : c.factors) s += ";" + (f ? fmt::format("{:.17g}", *f) : std::string());
  return s + (c.gray ? ";1" : ";0");
}

TEST(ColorJitter, EqualsTorchvisionOnFixedParameters) {
  if (!test::have_torch()) GTEST_SKIP() << "needs /usr/bin/python3 with torch and torchvision";
  // Every colour at a stride (hue and saturation have the most cases) and a noisy photo-like image.
  const int W = 256, H = 96;
  ImageU8 img = testing_images::make_rgb(W, H, 7);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < W; ++x) {
      uint8_t* p = img.row(y) + 3 * x;
      p[0] = uint8_t(x), p[1] = uint8_t(8 * y), p[2] = uint8_t((x * 7 + y * 13) & 0xff);
    }
  const std::vector<JitterCase> cases = {
      {{0, 1, 2, 3}, {1.3, 0.7, 1.4, -0.1}, false},
      {{3, 2, 1, 0}, {0.6, 1.5, 0.2, 0.25}, false},
      {{2, 0, 3, 1}, {1.0, 0.0, 2.0, -0.5}, true},
      {{1, 3, 0, 2}, {std::nullopt, 1.2, std::nullopt, 0.5}, false},  // amounts of 0: None
      {{0, 1, 2, 3}, {std::nullopt, std::nullopt, std::nullopt, std::nullopt}, true},
      {{0, 2, 1, 3}, {1.77, 0.31, 0.93, 0.013}, false},
  };
  const std::string dir = test::fresh_dir("color_jitter");
  fs::write_atomic(dir + "/in.raw", std::span<const uint8_t>(img.rgb));
  std::string cmd = "/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/color_jitter_ref.py " + dir + "/in.raw " +
                    std::to_string(W) + " " + std::to_string(H) + " " + dir + "/out.raw";
  for (const auto& c : cases) cmd += " '" + encode(c) + "'";
  auto r = test::run(cmd);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string ref = fs::read_text(dir + "/out.raw").value();
  ASSERT_EQ(ref.size(), cases.size() * img.rgb.size());
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<uint8_t> ours = img.rgb;
    color_jitter(ours, cases[k].order, cases[k].factors);
    if (cases[k].gray) to_grayscale_rgb(ours);
    size_t diff = 0;
    for (size_t i = 0; i < ours.size(); ++i) diff += ours[i] != uint8_t(ref[k * ours.size() + i]);
    EXPECT_EQ(diff, 0u) << "case " << encode(cases[k]);
  }
}

TEST(ColorJitter, ProbabilitiesAndRanges) {
  // color_jitter_prob / gray_scale_prob: how often each applies (4000 draws: +-3 sigma is
  // about +-0.02); factors stay within torchvision's ranges (a change of every pixel stays
  // within what the extreme factors allow: checked through brightness alone).
  ImageU8 img = testing_images::make_rgb(8, 8, 3);
  ColorAugCfg cfg;
  cfg.jitter = {0.4, 0, 0, 0};
  cfg.jitter_prob = 0.8;
  cfg.gray_prob = 0.2;
  Rng rng(5);
  int jittered = 0, gray = 0;
  const int n = 4000;
  for (int t = 0; t < n; ++t) {
    std::vector<uint8_t> px = img.rgb;
    random_color_aug(px, cfg, rng);
    bool is_gray = true;
    for (size_t i = 0; i < px.size(); i += 3) is_gray &= px[i] == px[i + 1] && px[i] == px[i + 2];
    gray += is_gray;
    if (!is_gray) {
      jittered += px != img.rgb;
      for (size_t i = 0; i < px.size(); ++i) {  // brightness factor in [0.6, 1.4]
        EXPECT_GE(px[i], uint8_t(float(img.rgb[i]) * 0.6f) - 1);
        EXPECT_LE(px[i], std::min(255, int(float(img.rgb[i]) * 1.4f) + 1));
      }
    }
  }
  EXPECT_NEAR(double(gray) / n, 0.2, 0.025);
  EXPECT_NEAR(double(jittered) / (n - gray), 0.8, 0.025);
}

TEST(ColorJitter, ParsesAugCfgKeys) {
  PreprocessCfg cfg;
  ASSERT_TRUE(parse_aug_cfg("color_jitter=(0.4, 0.4, 0.4, 0.1) color_jitter_prob=0.8 gray_scale_prob=0.2", &cfg).ok());
  EXPECT_EQ(cfg.color.jitter, (std::array<double, 4>{0.4, 0.4, 0.4, 0.1}));
  EXPECT_DOUBLE_EQ(cfg.color.jitter_prob, 0.8);
  EXPECT_DOUBLE_EQ(cfg.color.gray_prob, 0.2);
  PreprocessCfg g;
  ASSERT_TRUE(parse_aug_cfg("gray_scale_prob=1", &g).ok());
  EXPECT_DOUBLE_EQ(g.color.gray_prob, 1.0);
  for (const char* bad : {"color_jitter_prob=0.5", "color_jitter=(0.4,0.4,0.4,0.1)", "gray_scale_prob=1.5",
                          "color_jitter=(0.4,0.4,0.4) color_jitter_prob=1", "color_jitter=0.4 color_jitter_prob=1",
                          "color_jitter=(0.4,0.4,0.4,0.6) color_jitter_prob=1",
                          "color_jitter=(-1,0,0,0) color_jitter_prob=1", "re_prob=0.25"}) {
    Status s = parse_aug_cfg(bad, &g);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.error().find("--aug-cfg"), std::string::npos) << s.error();
  }
}

TEST(ColorJitter, TrainTransformAppliesGrayscale) {
  PreprocessCfg cfg;
  cfg.size = 16;
  cfg.color.gray_prob = 1.0;
  ImageU8 img = testing_images::make_rgb(40, 30, 9);
  Rng rng(1);
  std::vector<float> out(size_t(3 * 16 * 16));
  preprocess_train(img, cfg, rng, out);
  // Equal channels before Normalize: (x - mean_c) / std_c maps one byte to each channel's value.
  for (size_t i = 0; i < 256; ++i) {
    const float r = out[i] * cfg.std[0] + cfg.mean[0], g = out[256 + i] * cfg.std[1] + cfg.mean[1];
    EXPECT_NEAR(r, g, 1e-5f) << i;
  }
}

}  // namespace
}  // namespace oc
