// Pillow's blend and HSV conversions round as its C code does only without floating-point
// contraction: the build targets x86-64-v3, where GCC would fuse a + alpha * b into an FMA
// (measured: 1457 of 73,728 bytes off after a contrast and hue jitter). As resample.cpp.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "image/color_jitter.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace oc {

namespace {
uint8_t clip8(int v) { return uint8_t(std::clamp(v, 0, 255)); }

// Pillow's RGB -> L: ITU-R 601-2 luma in 16-bit fixed point, rounded.
uint8_t luma(const uint8_t* p) { return uint8_t((p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 0x8000) >> 16); }

// Image.blend(degenerate, image, factor): Pillow's ImagingBlend, alpha a C float; inside
// [0, 1] the float result is truncated, outside it is clipped to [0, 255] first.
uint8_t blend(uint8_t degenerate, uint8_t in, float alpha) {
  const float v = float(int(degenerate)) + alpha * float(int(in) - int(degenerate));
  if (alpha >= 0 && alpha <= 1.0f) return uint8_t(v);
  return v <= 0.0f ? 0 : v >= 255.0f ? 255 : uint8_t(v);
}

void check_rgb(std::span<uint8_t> rgb) { OC_CHECK(rgb.size() % 3 == 0, "RGB buffer of {} bytes", rgb.size()); }

// Pillow's Convert.c rgb2hsv_row (after colorsys.py), in its float/double mix.
void rgb_to_hsv(const uint8_t* in, uint8_t* out) {
  const uint8_t r = in[0], g = in[1], b = in[2];
  const uint8_t maxc = std::max(r, std::max(g, b)), minc = std::min(r, std::min(g, b));
  uint8_t uh = 0, us = 0;
  if (minc != maxc) {
    const float cr = float(maxc - minc);
    const float s = cr / float(maxc);
    const float rc = float(maxc - r) / cr, gc = float(maxc - g) / cr, bc = float(maxc - b) / cr;
    float h;
    if (r == maxc) h = bc - gc;
    else if (g == maxc) h = float(2.0 + rc - bc);
    else h = float(4.0 + gc - rc);
    h = float(std::fmod(h / 6.0 + 1.0, 1.0));
    uh = clip8(int(h * 255.0));
    us = clip8(int(s * 255.0));
  }
  out[0] = uh, out[1] = us, out[2] = maxc;
}

// Pillow's Convert.c hsv2rgb.
void hsv_to_rgb(const uint8_t* in, uint8_t* out) {
  const uint8_t h = in[0], s = in[1], v = in[2];
  if (s == 0) {
    out[0] = out[1] = out[2] = v;
    return;
  }
  const int i = int(std::floor(float(h) * 6.0 / 255.0));
  const float f = float(float(h) * 6.0 / 255.0 - float(i));
  const float fs = float(float(s) / 255.0);
  const uint8_t p = clip8(int(std::round(float(v) * (1.0 - fs))));
  const uint8_t q = clip8(int(std::round(float(v) * (1.0 - fs * f))));
  const uint8_t t = clip8(int(std::round(float(v) * (1.0 - fs * (1.0 - f)))));
  const uint8_t table[6][3] = {{v, t, p}, {q, v, p}, {p, v, t}, {p, q, v}, {t, p, v}, {v, p, q}};
  const uint8_t* c = table[i % 6];
  out[0] = c[0], out[1] = c[1], out[2] = c[2];
}
}  // namespace

void adjust_brightness(std::span<uint8_t> rgb, double factor) {
  check_rgb(rgb);
  for (uint8_t& x : rgb) x = blend(0, x, float(factor));
}

void adjust_contrast(std::span<uint8_t> rgb, double factor) {
  check_rgb(rgb);
  // ImageEnhance.Contrast: the degenerate image is the mean luma, int(mean + 0.5).
  const size_t n = rgb.size() / 3;
  if (n == 0) return;
  uint64_t sum = 0;
  for (size_t i = 0; i < n; ++i) sum += luma(&rgb[3 * i]);
  const uint8_t mean = uint8_t(int(double(sum) / double(n) + 0.5));
  for (uint8_t& x : rgb) x = blend(mean, x, float(factor));
}

void adjust_saturation(std::span<uint8_t> rgb, double factor) {
  check_rgb(rgb);
  // ImageEnhance.Color: blend with the image's own luma.
  for (size_t i = 0; i < rgb.size(); i += 3) {
    const uint8_t l = luma(&rgb[i]);
    for (size_t c = 0; c < 3; ++c) rgb[i + c] = blend(l, rgb[i + c], float(factor));
  }
}

void adjust_hue(std::span<uint8_t> rgb, double hue_factor) {
  check_rgb(rgb);
  OC_CHECK(hue_factor >= -0.5 && hue_factor <= 0.5, "hue_factor {} is not in [-0.5, 0.5]", hue_factor);
  // np.uint8(hue_factor * 255): truncation toward zero, then modulo 256.
  const uint8_t shift = uint8_t(int64_t(hue_factor * 255.0) & 0xff);
  for (size_t i = 0; i < rgb.size(); i += 3) {
    uint8_t hsv[3];
    rgb_to_hsv(&rgb[i], hsv);
    hsv[0] = uint8_t(hsv[0] + shift);
    hsv_to_rgb(hsv, &rgb[i]);
  }
}

void to_grayscale_rgb(std::span<uint8_t> rgb) {
  check_rgb(rgb);
  for (size_t i = 0; i < rgb.size(); i += 3) rgb[i] = rgb[i + 1] = rgb[i + 2] = luma(&rgb[i]);
}

void color_jitter(std::span<uint8_t> rgb, const std::array<int, 4>& order,
                  const std::array<std::optional<double>, 4>& factors) {
  for (int fn : order) {
    OC_CHECK(fn >= 0 && fn < 4, "color jitter function {}", fn);
    const std::optional<double>& f = factors[size_t(fn)];
    if (!f) continue;
    if (fn == 0) adjust_brightness(rgb, *f);
    else if (fn == 1) adjust_contrast(rgb, *f);
    else if (fn == 2) adjust_saturation(rgb, *f);
    else adjust_hue(rgb, *f);
  }
}

void random_color_aug(std::span<uint8_t> rgb, const ColorAugCfg& cfg, Rng& rng) {
  if (cfg.jitter_prob > 0 && rng.uniform() < cfg.jitter_prob) {
    // ColorJitter.get_params: a random order (torch.randperm(4)), then each factor uniform in
    // its range: [max(0, 1 - x), 1 + x] for brightness, contrast and saturation, [-h, h] for
    // hue; a zero amount is torchvision's None (nothing drawn, nothing applied).
    std::array<int, 4> order{0, 1, 2, 3};
    for (int i = 3; i > 0; --i) std::swap(order[size_t(i)], order[size_t(rng.below(uint64_t(i + 1)))]);
    std::array<std::optional<double>, 4> factors;
    for (size_t k = 0; k < 4; ++k) {
      const double x = cfg.jitter[k];
      if (x == 0) continue;
      const double lo = k == 3 ? -x : std::max(0.0, 1.0 - x), hi = k == 3 ? x : 1.0 + x;
      factors[k] = lo + (hi - lo) * rng.uniform();
    }
    color_jitter(rgb, order, factors);
  }
  if (cfg.gray_prob > 0 && rng.uniform() < cfg.gray_prob) to_grayscale_rgb(rgb);
}

}  // namespace oc
