// Transforms without Python: the fast resampler against the scalar PIL transcription,
// window/crop equivalences, RandomResizedCrop's fallback and rounding, --aug-cfg parsing,
// and normalization values. (Parity with PIL/torchvision itself is parity_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.h"
#include "image/resample.h"
#include "image/test_images.h"
#include "image/transform.h"

namespace oc {
namespace {

using testing_images::make_rgb;

TEST(ImageResample, FastPathEqualsPilTranscription) {
  Rng rng(3);
  int cases = 0;
  for (int t = 0; t < 300; ++t) {
    const int iw = 1 + int(rng.below(t < 150 ? 40 : 700)), ih = 1 + int(rng.below(t < 150 ? 40 : 400));
    ImageU8 img = make_rgb(iw, ih, uint32_t(t));
    // A sub-rectangle as source exercises the stride (the train path resizes crops in place).
    const int cx = int(rng.below(iw)), cy = int(rng.below(ih));
    const int cw = 1 + int(rng.below(iw - cx)), ch = 1 + int(rng.below(ih - cy));
    const PixelView src = PixelView::of(img).sub(cx, cy, cw, ch);
    const int ow = 1 + int(rng.below(300)), oh = 1 + int(rng.below(300));
    const int wx = int(rng.below(ow)), wy = int(rng.below(oh));
    const int ww = 1 + int(rng.below(ow - wx)), wh = 1 + int(rng.below(oh - wy));
    const Interp interp = t % 3 == 0 ? Interp::Bilinear : Interp::Bicubic;
    std::vector<uint8_t> fast(size_t(ww) * wh * 3), ref(fast.size());
    resample_window(src, ow, oh, interp, wx, wy, ww, wh, fast.data());
    resample_window_reference(src, ow, oh, interp, wx, wy, ww, wh, ref.data());
    ASSERT_EQ(fast, ref) << cw << "x" << ch << " -> " << ow << "x" << oh << " window " << wx << "," << wy << " "
                         << ww << "x" << wh << " interp " << int(interp);
    ++cases;
  }
  EXPECT_EQ(cases, 300);
}

TEST(ImageResample, IdentityAndConstantImages) {
  ImageU8 img = make_rgb(57, 31);
  EXPECT_EQ(resize(img, 57, 31, Interp::Bicubic).rgb, img.rgb);
  // Normalized weights: a constant picture stays constant through up- and downscaling,
  // including the negative bicubic lobes.
  for (int v : {0, 1, 77, 254, 255}) {
    ImageU8 flat = img;
    std::fill(flat.rgb.begin(), flat.rgb.end(), uint8_t(v));
    for (auto [w, h] : {std::pair{224, 224}, {13, 300}, {5, 2}, {1, 1}}) {
      ImageU8 out = resize(flat, w, h, Interp::Bicubic);
      for (uint8_t p : out.rgb) ASSERT_EQ(p, v) << w << "x" << h;
    }
  }
}

TEST(ImageResample, CoefficientWindowsFitTheInput) {
  for (int in : {1, 2, 3, 7, 224, 225, 640, 5000})
    for (int out : {1, 2, 224, 300, 1000})
      for (Interp ip : {Interp::Bicubic, Interp::Bilinear}) {
        AxisCoeffs c = resample_coeffs(in, out, 0, out, ip);
        ASSERT_EQ(int(c.start.size()), out);
        int64_t prev = -1;
        for (int i = 0; i < out; ++i) {
          ASSERT_GE(c.start[i], 0);
          ASSERT_LE(c.start[i] + c.taps, in);
          ASSERT_GE(c.start[i], prev);  // the window logic relies on this
          prev = c.start[i];
          int64_t sum = 0;
          for (int t = 0; t < c.taps; ++t) sum += c.k[size_t(i) * c.taps + t];
          // Each weight is rounded to 1/2^22 separately: the sum is 2^22 within taps/2.
          ASSERT_LE(std::llabs(sum - (int64_t(1) << kResamplePrecisionBits)), c.taps) << in << "->" << out;
        }
      }
}

TEST(ImageResample, WindowEqualsCropOfFullResize) {
  ImageU8 img = make_rgb(301, 207);
  ImageU8 full = resize(img, 331, 224, Interp::Bicubic);
  std::vector<uint8_t> win(size_t(224) * 224 * 3);
  resample_window(PixelView::of(img), 331, 224, Interp::Bicubic, 54, 0, 224, 224, win.data());
  EXPECT_EQ(win, crop(full, 54, 0, 224, 224).rgb);
}

TEST(ImageTransform, RandomResizedCropFallbackAndRounding) {
  Rng rng(5);
  const std::array<double, 2> scale{0.9, 1.0}, ratio{3.0 / 4.0, 4.0 / 3.0};
  // Wide: every attempt is too tall, so the central crop with the ratio clamped to 4/3:
  // h = 10, w = round(13.33) = 13, x = (1000 - 13) // 2.
  EXPECT_EQ(random_resized_crop_params(1000, 10, scale, ratio, rng), (std::array<int, 4>{493, 0, 13, 10}));
  EXPECT_EQ(random_resized_crop_params(10, 1000, scale, ratio, rng), (std::array<int, 4>{0, 493, 10, 13}));
  // Scale above 1 never fits: the whole image.
  EXPECT_EQ(random_resized_crop_params(100, 100, {1.5, 2.0}, ratio, rng), (std::array<int, 4>{0, 0, 100, 100}));
  // Python's round() is half-to-even: round(3 * 1.5) = round(4.5) = 4, not 5.
  EXPECT_EQ(random_resized_crop_params(1000, 3, scale, {0.5, 1.5}, rng), (std::array<int, 4>{498, 0, 4, 3}));
}

TEST(ImageTransform, RandomResizedCropStaysInRangeAndIsSeeded) {
  Rng a(9), b(9);
  double area_sum = 0;
  const int n = 20000;
  for (int t = 0; t < n; ++t) {
    auto p = random_resized_crop_params(1000, 1000, {0.9, 1.0}, {3.0 / 4.0, 4.0 / 3.0}, a);
    ASSERT_EQ(p, random_resized_crop_params(1000, 1000, {0.9, 1.0}, {3.0 / 4.0, 4.0 / 3.0}, b));
    auto [x, y, w, h] = p;
    ASSERT_TRUE(x >= 0 && y >= 0 && x + w <= 1000 && y + h <= 1000);
    const double frac = double(w) * h / 1e6;
    // Rounding w and h moves the area by at most ~(w + h) / 2 pixels.
    ASSERT_GE(frac, 0.9 - 1e-3);
    ASSERT_LE(frac, 1.0);
    area_sum += frac;
  }
  // Accepted samples favour smaller areas (large ones overflow more often), so the mean
  // sits below the 0.95 midpoint; torchvision gives ~0.94 here.
  EXPECT_GT(area_sum / n, 0.925);
  EXPECT_LT(area_sum / n, 0.955);
}

TEST(ImageTransform, ParsesAugCfg) {
  PreprocessCfg cfg;
  ASSERT_TRUE(parse_aug_cfg("scale=(0.8, 1.0) ratio=(0.75,1.3333)", &cfg).ok());
  EXPECT_DOUBLE_EQ(cfg.scale[0], 0.8);
  EXPECT_DOUBLE_EQ(cfg.scale[1], 1.0);
  EXPECT_DOUBLE_EQ(cfg.ratio[1], 1.3333);
  ASSERT_TRUE(parse_aug_cfg("scale=[0.5,1]  use_timm=False", &cfg).ok());
  EXPECT_DOUBLE_EQ(cfg.scale[0], 0.5);
  ASSERT_TRUE(parse_aug_cfg("", &cfg).ok());
  EXPECT_DOUBLE_EQ(cfg.scale[0], 0.5);

  const PreprocessCfg before = cfg;
  for (const char* bad : {"foo=1", "scale=(0.9,1.0) bar=(1,2)", "color_jitter=(0.4,0.4,0.4,0.1)", "scale=0.9",
                          "scale=(1.0,0.5)", "scale=(0.9,1.0", "scale", "ratio=(a,b)", "scale=(0,1)",
                          "use_timm=True", "scale=(0.1,0.2,0.3)"}) {
    Status s = parse_aug_cfg(bad, &cfg);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_FALSE(s.error().empty());
    EXPECT_EQ(cfg.scale, before.scale) << "cfg must be unchanged on error: " << bad;
  }
  Status s = parse_aug_cfg("scale=(0.9,1.0) foo=1", &cfg);
  EXPECT_NE(s.error().find("foo"), std::string::npos) << s.error();
}

float norm(int v, int c, const PreprocessCfg& cfg) { return (float(v) / 255.0f - cfg.mean[c]) / cfg.std[c]; }

TEST(ImageTransform, EvalOutputsNormalizedChw) {
  PreprocessCfg cfg;
  ImageU8 img = make_rgb(500, 300);
  for (size_t i = 0; i < img.rgb.size(); i += 3) img.rgb[i] = 10, img.rgb[i + 1] = 128, img.rgb[i + 2] = 250;
  std::vector<float> out(3 * 224 * 224);
  for (ResizeMode m : {ResizeMode::Shortest, ResizeMode::Squash}) {
    cfg.resize_mode = m;
    preprocess_eval(img, cfg, out);
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 224 * 224; i += 97) ASSERT_EQ(out[c * 224 * 224 + i], norm(c == 0 ? 10 : c == 1 ? 128 : 250, c, cfg));
  }
  // Longest: 500x300 -> 224x134, padded 45 rows on top and 45 below with fill_color.
  cfg.resize_mode = ResizeMode::Longest;
  cfg.fill_color = 255;
  preprocess_eval(img, cfg, out);
  EXPECT_EQ(out[0], norm(255, 0, cfg));                     // row 0: padding
  EXPECT_EQ(out[44 * 224 + 5], norm(255, 0, cfg));          // row 44: padding
  EXPECT_EQ(out[45 * 224 + 5], norm(10, 0, cfg));           // row 45: picture
  EXPECT_EQ(out[178 * 224 + 5], norm(10, 0, cfg));          // row 178: last picture row
  EXPECT_EQ(out[179 * 224 + 5], norm(255, 0, cfg));         // row 179: padding
  EXPECT_EQ(out[2 * 224 * 224 + 100 * 224], norm(250, 2, cfg));
}

TEST(ImageTransform, ExtremeAspectRatiosComputeOnlyTheCrop) {
  // 2 x 60000: torchvision would resize to 224 x 6.7M before cropping; we compute the crop.
  for (auto [w, h] : {std::pair{2, 60000}, {60000, 2}, {1, 1}}) {
    ImageU8 img = make_rgb(w, h);
    PreprocessCfg cfg;
    std::vector<float> out(3 * 224 * 224);
    Rng rng(1);
    for (ResizeMode m : {ResizeMode::Shortest, ResizeMode::Longest, ResizeMode::Squash}) {
      cfg.resize_mode = m;
      preprocess_eval(img, cfg, out);
      for (float v : out) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 2.2f);
    }
    preprocess_train(img, cfg, rng, out);
    for (float v : out) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 2.2f);
  }
}

TEST(ImageTransform, TrainIsDeterministicPerSeed) {
  PreprocessCfg cfg;
  ImageU8 img = make_rgb(320, 240);
  std::vector<float> a(3 * 224 * 224), b(a.size()), c(a.size());
  Rng r1(42), r2(42), r3(43);
  preprocess_train(img, cfg, r1, a);
  preprocess_train(img, cfg, r2, b);
  preprocess_train(img, cfg, r3, c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Every value is some normalized uint8.
  for (float v : a) {
    ASSERT_GE(v, norm(0, 0, cfg) - 1e-5f);
    ASSERT_LE(v, norm(255, 2, cfg) + 1e-5f);
  }
}

}  // namespace
}  // namespace oc
