// Source-mode images without Python: PNG modes from libpng-written files, the resampler on
// 1/2/4 channels against the scalar PIL transcription, NEAREST's running sum, window/crop
// equivalences for every mode, PIL's same-size copy, and the transforms on SourceImage.
// (Parity with PIL/torchvision itself is parity_test.cpp, ImageModeParity.*.)
#include <gtest/gtest.h>

#include <png.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/rng.h"
#include "image/codec.h"
#include "image/mode_resize.h"
#include "image/resample.h"
#include "image/test_images.h"
#include "image/transform.h"

namespace oc {
namespace {

SourceImage random_image(PixelMode mode, int w, int h, uint64_t seed) {
  Rng rng(seed);
  SourceImage img;
  img.mode = mode;
  img.width = w;
  img.height = h;
  img.pixels.resize(size_t(w) * h * mode_channels(mode));
  for (auto& v : img.pixels) v = uint8_t(rng.below(256));
  if (mode == PixelMode::Bit)
    for (auto& v : img.pixels) v = v < 128 ? 0 : 255;
  if (mode == PixelMode::P) {
    std::vector<uint8_t> rgb(600);
    for (auto& v : rgb) v = uint8_t(rng.below(256));
    img.palette = pil_palette(rgb.data(), 200);
  }
  return img;
}

// A PNG written with libpng: color type, bit depth, packed rows, optional palette.
std::vector<uint8_t> write_png(int w, int h, int color, int depth, const std::vector<std::vector<uint8_t>>& rows,
                               const std::vector<png_color>& palette = {}) {
  std::vector<uint8_t> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    ADD_FAILURE() << "libpng write failed";
    return {};
  }
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep d, size_t n) {
        auto* v = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(p));
        v->insert(v->end(), d, d + n);
      },
      nullptr);
  png_set_IHDR(png, info, w, h, depth, color, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), int(palette.size()));
  png_write_info(png, info);
  for (const auto& r : rows) png_write_row(png, r.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

TEST(ImageSourceDecode, PngModesAsPilOpensThem) {
  // Palette with 3 entries and an index past them: PIL shows the missing entry as the gray
  // ramp (index 9 -> (9, 9, 9)); 2-bit indices are unpacked to one byte each.
  auto p = decode_source_image(write_png(4, 1, PNG_COLOR_TYPE_PALETTE, 8, {{0, 1, 2, 9}},
                                         {{10, 20, 30}, {40, 50, 60}, {70, 80, 90}}));
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->mode, PixelMode::P);
  EXPECT_EQ(p->pixels, (std::vector<uint8_t>{0, 1, 2, 9}));
  ImageU8 rgb = to_rgb(*p);
  EXPECT_EQ(rgb.rgb, (std::vector<uint8_t>{10, 20, 30, 40, 50, 60, 70, 80, 90, 9, 9, 9}));
  auto p2 = decode_source_image(write_png(5, 1, PNG_COLOR_TYPE_PALETTE, 2, {{0b00011011, 0b01000000}},
                                          {{1, 1, 1}, {2, 2, 2}, {3, 3, 3}, {4, 4, 4}}));
  ASSERT_TRUE(p2.ok()) << p2.error();
  EXPECT_EQ(p2->pixels, (std::vector<uint8_t>{0, 1, 2, 3, 1}));

  auto bit = decode_source_image(write_png(3, 1, PNG_COLOR_TYPE_GRAY, 1, {{0b10100000}}));
  ASSERT_TRUE(bit.ok()) << bit.error();
  EXPECT_EQ(bit->mode, PixelMode::Bit);
  EXPECT_EQ(bit->pixels, (std::vector<uint8_t>{255, 0, 255}));

  auto l4 = decode_source_image(write_png(2, 1, PNG_COLOR_TYPE_GRAY, 4, {{0x3F}}));
  ASSERT_TRUE(l4.ok()) << l4.error();
  EXPECT_EQ(l4->mode, PixelMode::L);
  EXPECT_EQ(l4->pixels, (std::vector<uint8_t>{3 * 17, 255}));

  auto la = decode_source_image(write_png(2, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 8, {{7, 100, 8, 0}}));
  ASSERT_TRUE(la.ok()) << la.error();
  EXPECT_EQ(la->mode, PixelMode::LA);
  EXPECT_EQ(la->pixels, (std::vector<uint8_t>{7, 100, 8, 0}));
  EXPECT_EQ(to_rgb(*la).rgb, (std::vector<uint8_t>{7, 7, 7, 8, 8, 8}));  // alpha dropped, not composited

  auto rgba16 = decode_source_image(write_png(1, 1, PNG_COLOR_TYPE_RGB_ALPHA, 16, {{1, 2, 3, 4, 5, 6, 7, 8}}));
  ASSERT_TRUE(rgba16.ok()) << rgba16.error();
  EXPECT_EQ(rgba16->mode, PixelMode::RGBA);
  EXPECT_EQ(rgba16->pixels, (std::vector<uint8_t>{1, 3, 5, 7}));  // high bytes

  auto g16 = decode_source_image(write_png(2, 1, PNG_COLOR_TYPE_GRAY, 16, {{0, 200, 1, 0}}));
  ASSERT_TRUE(g16.ok()) << g16.error();
  EXPECT_EQ(g16->mode, PixelMode::L);  // PIL's "I", clipped as i2rgb clips
  EXPECT_EQ(g16->pixels, (std::vector<uint8_t>{200, 255}));
}

TEST(ImageSourceDecode, JpegAndWebpModesAndRgbApiAgree) {
  ImageU8 img = testing_images::make_rgb(40, 30);
  for (ImageFormat f : {ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Webp}) {
    auto bytes = encode_image(img, f, 90);
    ASSERT_TRUE(bytes.ok());
    auto src = decode_source_image(*bytes);
    auto rgb = decode_image(*bytes);
    ASSERT_TRUE(src.ok() && rgb.ok());
    EXPECT_EQ(src->mode, PixelMode::RGB);
    EXPECT_EQ(src->pixels, rgb->rgb);
  }
  EXPECT_FALSE(decode_source_image({}).ok());
  EXPECT_FALSE(decode_source_image_file("/nonexistent/oc_mode_test.png").ok());
}

TEST(ImageResample, FastPathEqualsPilTranscriptionAllChannels) {
  Rng rng(17);
  for (int t = 0; t < 240; ++t) {
    const int C = 1 + t % 4;
    const PixelMode mode = C == 1 ? PixelMode::L : C == 2 ? PixelMode::LA : C == 3 ? PixelMode::RGB : PixelMode::CMYK;
    const int iw = 1 + int(rng.below(t < 120 ? 40 : 500)), ih = 1 + int(rng.below(t < 120 ? 40 : 300));
    SourceImage img = random_image(mode, iw, ih, uint64_t(t));
    const int cx = int(rng.below(iw)), cy = int(rng.below(ih));
    const int cw = 1 + int(rng.below(iw - cx)), ch = 1 + int(rng.below(ih - cy));
    const PixelView src = PixelView::of(img).sub(cx, cy, cw, ch);
    const int ow = 1 + int(rng.below(300)), oh = 1 + int(rng.below(300));
    const int wx = int(rng.below(ow)), wy = int(rng.below(oh));
    const int ww = 1 + int(rng.below(ow - wx)), wh = 1 + int(rng.below(oh - wy));
    const Interp interp = t % 3 == 0 ? Interp::Bilinear : Interp::Bicubic;
    std::vector<uint8_t> fast(size_t(ww) * wh * C), ref(fast.size());
    resample_window(src, ow, oh, interp, wx, wy, ww, wh, fast.data());
    resample_window_reference(src, ow, oh, interp, wx, wy, ww, wh, ref.data());
    ASSERT_EQ(fast, ref) << C << " channels " << cw << "x" << ch << " -> " << ow << "x" << oh << " window " << wx
                         << "," << wy << " " << ww << "x" << wh;
  }
}

TEST(ImageNearest, IndexIsPilsRunningSum) {
  int differs_from_product = 0;
  for (int in : {1, 2, 3, 10, 96, 97, 128, 224, 1000})
    for (int out : {1, 3, 7, 224, 225, 333, 1000}) {
      const double scale = double(in) / out;
      double xo = scale * 0.5;
      std::vector<int> want;
      for (int x = 0; x < out; ++x, xo += scale) want.push_back(std::min(int(xo), in - 1));
      ASSERT_EQ(nearest_index(in, out, 0, out), want) << in << " -> " << out;
      // A window is the same slice of the full table.
      const int first = out / 3, count = out - first;
      ASSERT_EQ(nearest_index(in, out, first, count), std::vector<int>(want.begin() + first, want.end()));
      for (int x = 0; x < out; ++x) differs_from_product += want[x] != int(scale * (x + 0.5));
    }
  // The running sum is not scale * (x + 0.5) (10 -> 3: 1.67 + 3.33 falls just below 5).
  EXPECT_GT(differs_from_product, 0);
}

TEST(ImageModeResize, WindowEqualsCropOfFullResizeInEveryMode) {
  for (PixelMode mode : {PixelMode::L, PixelMode::LA, PixelMode::RGB, PixelMode::RGBA, PixelMode::P, PixelMode::Bit,
                         PixelMode::CMYK}) {
    SCOPED_TRACE(mode_name(mode));
    SourceImage img = random_image(mode, 131, 87, 5);
    const SourceView v = SourceView::of(img);
    for (Interp ip : {Interp::Bicubic, Interp::Bilinear}) {
      std::vector<uint8_t> full(size_t(200) * 150 * 3), win(size_t(90) * 70 * 3);
      resize_window_rgb(v, 200, 150, ip, 0, 0, 200, 150, full.data());
      resize_window_rgb(v, 200, 150, ip, 37, 51, 90, 70, win.data());
      for (int y = 0; y < 70; ++y)
        ASSERT_TRUE(std::equal(win.begin() + y * 90 * 3, win.begin() + (y + 1) * 90 * 3,
                               full.begin() + ((51 + y) * 200 + 37) * 3))
            << "row " << y;
    }
  }
}

TEST(ImageModeResize, PaletteAndBilevelUseNearestWhateverTheFilter) {
  SourceImage p = random_image(PixelMode::P, 50, 40, 8);
  std::set<std::array<uint8_t, 3>> colours;
  for (int i = 0; i < 256; ++i) colours.insert({p.palette[3 * i], p.palette[3 * i + 1], p.palette[3 * i + 2]});
  std::vector<uint8_t> out(size_t(173) * 61 * 3);
  resize_window_rgb(SourceView::of(p), 173, 61, Interp::Bicubic, 0, 0, 173, 61, out.data());
  for (size_t i = 0; i < out.size(); i += 3)
    ASSERT_TRUE(colours.count({out[i], out[i + 1], out[i + 2]})) << "pixel " << i / 3 << " is not a palette colour";
  SourceImage bit = random_image(PixelMode::Bit, 50, 40, 9);
  resize_window_rgb(SourceView::of(bit), 173, 61, Interp::Bicubic, 0, 0, 173, 61, out.data());
  for (uint8_t v : out) ASSERT_TRUE(v == 0 || v == 255);
}

TEST(ImageModeResize, SameSizeIsPilsCopyAndAlphaIsPremultiplied) {
  // Partially transparent pixels: PIL returns a copy at the same size (no premultiply round
  // trip, which would lose precision), and premultiplies when the size changes.
  SourceImage img = random_image(PixelMode::RGBA, 64, 48, 11);
  std::vector<uint8_t> same(size_t(64) * 48 * 3);
  resize_window_rgb(SourceView::of(img), 64, 48, Interp::Bicubic, 0, 0, 64, 48, same.data());
  EXPECT_EQ(same, to_rgb(img).rgb);
  std::vector<uint8_t> round_trip(img.pixels.size());
  premultiply_alpha(img.pixels.data(), size_t(64) * 48, 4, round_trip.data());
  unpremultiply_alpha(round_trip.data(), size_t(64) * 48, 4);
  EXPECT_NE(round_trip, img.pixels) << "the round trip is lossy, so skipping it at the same size matters";

  // A fully transparent left half keeps its colour bytes, but premultiplied resampling gives
  // it no weight: an opaque right half's colour bleeds in unchanged next to the border.
  SourceImage half;
  half.mode = PixelMode::RGBA;
  half.width = 8;
  half.height = 1;
  for (int x = 0; x < 8; ++x) {
    const bool opaque = x >= 4;
    half.pixels.insert(half.pixels.end(), {uint8_t(opaque ? 200 : 0), uint8_t(opaque ? 100 : 255), 50,
                                           uint8_t(opaque ? 255 : 0)});
  }
  std::vector<uint8_t> out(size_t(4) * 3);
  resize_window_rgb(SourceView::of(half), 4, 1, Interp::Bilinear, 0, 0, 4, 1, out.data());
  // Output 2 reads inputs 3..6 with weights 1/8, 3/8, 3/8, 1/8; input 3 is transparent, so
  // unpremultiplied the colour stays the opaque one (within the fixed-point rounding)...
  EXPECT_NEAR(out[2 * 3 + 0], 200, 1);
  EXPECT_NEAR(out[2 * 3 + 1], 100, 1);
  // ...where converting to RGB first mixes in the hidden (0, 255, 50): G = 255/8 + 7*100/8.
  ImageU8 first = to_rgb(half);
  std::vector<uint8_t> rgb_first(size_t(4) * 3);
  resample_window(PixelView::of(first), 4, 1, Interp::Bilinear, 0, 0, 4, 1, rgb_first.data());
  EXPECT_NEAR(rgb_first[2 * 3 + 1], 119, 1);
}

TEST(ImageModeTransform, RgbSourceEqualsImageU8AndModesRun) {
  PreprocessCfg cfg;
  ImageU8 rgb = testing_images::make_rgb(320, 200);
  SourceImage src;
  src.mode = PixelMode::RGB;
  src.width = rgb.width;
  src.height = rgb.height;
  src.pixels = rgb.rgb;
  std::vector<float> a(3 * 224 * 224), b(a.size());
  for (ResizeMode m : {ResizeMode::Shortest, ResizeMode::Longest, ResizeMode::Squash}) {
    cfg.resize_mode = m;
    preprocess_eval(rgb, cfg, a);
    preprocess_eval(src, cfg, b);
    ASSERT_EQ(a, b);
  }
  Rng r1(4), r2(4);
  preprocess_train(rgb, cfg, r1, a);
  preprocess_train(src, cfg, r2, b);
  EXPECT_EQ(a, b);
  // Longest pads a P image with palette entry fill_color (torchvision pads in the mode).
  SourceImage p = random_image(PixelMode::P, 300, 100, 12);
  cfg.resize_mode = ResizeMode::Longest;
  cfg.fill_color = 7;
  preprocess_eval(p, cfg, a);
  for (int c = 0; c < 3; ++c)
    EXPECT_EQ(a[size_t(c) * 224 * 224], (float(p.palette[21 + c]) / 255.0f - cfg.mean[c]) / cfg.std[c]);
}

TEST(ImageModeTransform, ExtremeAspectRatiosInEveryMode) {
  // 1 x 20M: the shortest-side resize is 224 x 4.48G, whose NEAREST window starts past the
  // 2^24 running-sum replay; 2 x 60000 replays 3.4M steps.
  for (auto [w, h] : {std::pair{1, 20'000'000}, {2, 60000}, {60000, 2}}) {
    for (PixelMode mode : {PixelMode::P, PixelMode::RGBA, PixelMode::L}) {
      if (w * h > 200000 && mode != PixelMode::P) continue;  // the big one once is enough
      SourceImage img = random_image(mode, w, h, 13);
      PreprocessCfg cfg;
      std::vector<float> out(3 * 224 * 224);
      Rng rng(1);
      preprocess_eval(img, cfg, out);
      for (float v : out) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 2.2f);
      preprocess_train(img, cfg, rng, out);
      for (float v : out) ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 2.2f);
    }
  }
}

}  // namespace
}  // namespace oc
