// OpenCLIP's image transforms (open_clip/transform.py image_transform) on top of the
// PIL-exact resampler: eval resize modes shortest/longest/squash with torchvision's size
// and crop rounding, train RandomResizedCrop (torchvision's get_params procedure) and the
// optional colour augmentations (color_jitter.h), both in
// the image's own PIL mode and then _convert_to_rgb (mode_resize.h), then ToTensor +
// Normalize computed in float32 exactly as torchvision does.
#include "image/transform.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "image/color_jitter.h"
#include "image/mode_resize.h"
#include "image/resample.h"

namespace oc {
namespace {

// Python's round() on a float: half to even (the default FE_TONEAREST mode).
int py_round(double x) { return int(std::nearbyint(x)); }

// ToTensor (uint8 / 255 in float32) then Normalize ((x - mean) / std in float32): one
// table per channel gives torchvision's exact float32 values.
struct NormLut {
  float v[3][256];
  explicit NormLut(const PreprocessCfg& cfg) {
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 256; ++i) v[c][i] = (float(i) / 255.0f - cfg.mean[c]) / cfg.std[c];
  }
};

}  // namespace

void normalize_chw(const uint8_t* hwc, int size, const PreprocessCfg& cfg, std::span<float> out) {
  OC_CHECK(out.size() == size_t(3) * size * size, "output has {} floats, want 3x{}x{}", out.size(), size, size);
  const NormLut lut(cfg);
  const size_t plane = size_t(size) * size;
  float* r = out.data();
  float* g = r + plane;
  float* b = g + plane;
  for (size_t i = 0; i < plane; ++i) {
    r[i] = lut.v[0][hwc[3 * i]];
    g[i] = lut.v[1][hwc[3 * i + 1]];
    b[i] = lut.v[2][hwc[3 * i + 2]];
  }
}

void normalize_hwc(const uint8_t* hwc, int size, const PreprocessCfg& cfg, std::span<float> out) {
  OC_CHECK(out.size() == size_t(3) * size * size, "output has {} floats, want {}x{}x3", out.size(), size, size);
  const NormLut lut(cfg);
  const size_t plane = size_t(size) * size;
  for (size_t i = 0; i < plane; ++i)
    for (size_t c = 0; c < 3; ++c) out[3 * i + c] = lut.v[c][hwc[3 * i + c]];
}

namespace {

std::vector<uint8_t>& hwc_scratch(size_t n) {
  thread_local std::vector<uint8_t> buf;
  buf.resize(n);
  return buf;
}

void check_image(const ImageU8& img) {
  OC_CHECK(img.width > 0 && img.height > 0 && img.rgb.size() == size_t(img.width) * img.height * 3,
           "bad image {}x{} ({} bytes)", img.width, img.height, img.rgb.size());
}

void check_image(const SourceImage& img) {
  OC_CHECK(source_image_valid(img), "bad {} image {}x{} ({} bytes, palette {})", mode_name(img.mode), img.width,
           img.height, img.pixels.size(), img.palette.size());
}

// Parses "(a, b, ...)" or "[a,b,...]" into doubles (all finite).
bool parse_tuple(const std::string& v, std::vector<double>* out) {
  if (v.size() < 2) return false;
  char open = v.front(), close = v.back();
  if (!((open == '(' && close == ')') || (open == '[' && close == ']'))) return false;
  out->clear();
  std::string inner = v.substr(1, v.size() - 2);
  for (size_t at = 0;;) {
    const size_t comma = inner.find(',', at);
    const std::string item = inner.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    const double x = std::strtod(item.c_str(), &end);
    if (end == item.c_str() || std::string(end).find_first_not_of(" \t") != std::string::npos || !std::isfinite(x))
      return false;
    out->push_back(x);
    if (comma == std::string::npos) return true;
    at = comma + 1;
  }
}

bool parse_pair(const std::string& v, std::array<double, 2>* out) {
  std::vector<double> t;
  if (!parse_tuple(v, &t) || t.size() != 2) return false;
  (*out)[0] = t[0], (*out)[1] = t[1];
  return true;
}

// A Python number literal (what ast.literal_eval gives OpenCLIP's ParseKwargs).
bool parse_number(const std::string& v, double* out) {
  char* end = nullptr;
  *out = std::strtod(v.c_str(), &end);
  return end != v.c_str() && *end == 0 && std::isfinite(*out);
}

// color_jitter=(b, c, s, h): OpenCLIP asserts 4 values; torchvision's range checks.
Status parse_color_jitter(const std::string& value, std::array<double, 4>* out) {
  std::vector<double> t;
  if (!parse_tuple(value, &t) || t.size() != 4)
    return Err{"--aug-cfg: color_jitter wants 4 numbers (brightness, contrast, saturation, hue) like "
               "(0.4, 0.4, 0.4, 0.1), got '" + value + "'"};
  for (double v : t)
    if (v < 0) return Err{"--aug-cfg: color_jitter values must be non-negative, got '" + value + "'"};
  if (t[3] > 0.5) return Err{"--aug-cfg: color_jitter's hue must be in [0, 0.5] (torchvision), got '" + value + "'"};
  std::copy(t.begin(), t.end(), out->begin());
  return Status::success();
}

}  // namespace

ImageU8 crop(const ImageU8& img, int x, int y, int w, int h) {
  check_image(img);
  OC_CHECK(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= img.width && y + h <= img.height,
           "crop {},{} {}x{} outside {}x{}", x, y, w, h, img.width, img.height);
  ImageU8 out;
  out.width = w;
  out.height = h;
  out.rgb.resize(size_t(w) * h * 3);
  for (int r = 0; r < h; ++r) std::memcpy(out.row(r), img.row(y + r) + size_t(x) * 3, size_t(w) * 3);
  return out;
}

ImageU8 resize(const ImageU8& img, int out_w, int out_h, Interp interp) {
  check_image(img);
  ImageU8 out;
  out.width = out_w;
  out.height = out_h;
  out.rgb.resize(size_t(out_w) * out_h * 3);
  resample_window(PixelView::of(img), out_w, out_h, interp, 0, 0, out_w, out_h, out.rgb.data());
  return out;
}

namespace {

// The eval transform on any mode: resize (and crop/pad) in the mode, then convert('RGB').
void eval_view(const SourceView& src, const PreprocessCfg& cfg, std::span<uint8_t> hwc) {
  const int S = cfg.size, W = src.px.width, H = src.px.height;
  OC_CHECK(S > 0 && hwc.size() == size_t(S) * S * 3, "image size {}: {} bytes of pixels", S, hwc.size());
  switch (cfg.resize_mode) {
    case ResizeMode::Shortest: {
      // torchvision Resize(int): shorter side -> S, longer -> int(S * long / short); then
      // CenterCrop with offsets int(round((dim - S) / 2.0)).
      // Sizes are 64-bit: a 1 x 25M-pixel image asks for a 224 x 5.6G resize, of which the
      // window computes only the 224 x 224 crop.
      const int64_t shorter = std::min(W, H), longer = std::max(W, H);
      const int64_t new_long = int64_t(double(int64_t(S) * longer) / double(shorter));
      const int64_t nw = W <= H ? S : new_long, nh = W <= H ? new_long : S;
      const int64_t top = int64_t(std::nearbyint((nh - S) / 2.0)), left = int64_t(std::nearbyint((nw - S) / 2.0));
      resize_window_rgb(src, nw, nh, cfg.interpolation, left, top, S, S, hwc.data());
      break;
    }
    case ResizeMode::Squash:
      resize_window_rgb(src, S, S, cfg.interpolation, 0, 0, S, S, hwc.data());
      break;
    case ResizeMode::Longest: {
      // ResizeKeepRatio(longest=1): ratio = max(H/S, W/S), size = round(dim / ratio);
      // then CenterCropOrPad with fill_color.
      const double ratio = std::max(double(H) / S, double(W) / S);
      const int nh = std::max(1, py_round(H / ratio)), nw = std::max(1, py_round(W / ratio));
      std::vector<uint8_t> resized(size_t(nw) * nh * 3);
      resize_window_rgb(src, nw, nh, cfg.interpolation, 0, 0, nw, nh, resized.data());
      const int pad_l = S > nw ? (S - nw) / 2 : 0, pad_r = S > nw ? (S - nw + 1) / 2 : 0;
      const int pad_t = S > nh ? (S - nh) / 2 : 0, pad_b = S > nh ? (S - nh + 1) / 2 : 0;
      const int pw = nw + pad_l + pad_r, ph = nh + pad_t + pad_b;
      const int top = py_round((ph - S) / 2.0), left = py_round((pw - S) / 2.0);
      // torchvision pads in the image's mode (a P image gets palette entry fill_color).
      const std::array<uint8_t, 3> fill = fill_rgb(src, cfg.fill_color);
      for (size_t i = 0; i < size_t(S) * S; ++i) std::memcpy(&hwc[3 * i], fill.data(), 3);
      for (int y = 0; y < S; ++y) {
        const int iy = y + top - pad_t;
        if (iy < 0 || iy >= nh) continue;
        for (int x = 0; x < S; ++x) {
          const int ix = x + left - pad_l;
          if (ix < 0 || ix >= nw) continue;
          std::memcpy(&hwc[(size_t(y) * S + x) * 3], &resized[(size_t(iy) * nw + ix) * 3], 3);
        }
      }
      break;
    }
  }
}

void train_view(const SourceView& src, const PreprocessCfg& cfg, Rng& rng, std::span<uint8_t> hwc) {
  const int S = cfg.size;
  OC_CHECK(S > 0 && hwc.size() == size_t(S) * S * 3, "image size {}: {} bytes of pixels", S, hwc.size());
  const auto [x, y, w, h] = random_resized_crop_params(src.px.width, src.px.height, cfg.scale, cfg.ratio, rng);
  // OpenCLIP's train transform is RandomResizedCrop(..., interpolation=BICUBIC) whatever
  // --image-interpolation says; torchvision crops first, then resizes the crop.
  resize_window_rgb(src.sub(x, y, w, h), S, S, Interp::Bicubic, 0, 0, S, S, hwc.data());
  // Then _convert_to_rgb (done by the resize), color_jitter and gray_scale, ToTensor, Normalize.
  if (cfg.color.active()) random_color_aug(hwc, cfg.color, rng);
}

// The fp32 output: the pixels in thread scratch, then ToTensor + Normalize.
template <class View>
void to_floats(const PreprocessCfg& cfg, std::span<float> out, View&& view) {
  std::vector<uint8_t>& hwc = hwc_scratch(size_t(cfg.size) * cfg.size * 3);
  view(std::span<uint8_t>(hwc));
  normalize_chw(hwc.data(), cfg.size, cfg, out);
}

}  // namespace

void preprocess_eval(const ImageU8& img, const PreprocessCfg& cfg, std::span<uint8_t> hwc) {
  check_image(img);
  eval_view(SourceView::of(img), cfg, hwc);
}

void preprocess_eval(const SourceImage& img, const PreprocessCfg& cfg, std::span<uint8_t> hwc) {
  check_image(img);
  eval_view(SourceView::of(img), cfg, hwc);
}

void preprocess_train(const ImageU8& img, const PreprocessCfg& cfg, Rng& rng, std::span<uint8_t> hwc) {
  check_image(img);
  train_view(SourceView::of(img), cfg, rng, hwc);
}

void preprocess_train(const SourceImage& img, const PreprocessCfg& cfg, Rng& rng, std::span<uint8_t> hwc) {
  check_image(img);
  train_view(SourceView::of(img), cfg, rng, hwc);
}

void preprocess_eval(const ImageU8& img, const PreprocessCfg& cfg, std::span<float> out) {
  to_floats(cfg, out, [&](std::span<uint8_t> hwc) { preprocess_eval(img, cfg, hwc); });
}

void preprocess_eval(const SourceImage& img, const PreprocessCfg& cfg, std::span<float> out) {
  to_floats(cfg, out, [&](std::span<uint8_t> hwc) { preprocess_eval(img, cfg, hwc); });
}

void preprocess_train(const ImageU8& img, const PreprocessCfg& cfg, Rng& rng, std::span<float> out) {
  to_floats(cfg, out, [&](std::span<uint8_t> hwc) { preprocess_train(img, cfg, rng, hwc); });
}

void preprocess_train(const SourceImage& img, const PreprocessCfg& cfg, Rng& rng, std::span<float> out) {
  to_floats(cfg, out, [&](std::span<uint8_t> hwc) { preprocess_train(img, cfg, rng, hwc); });
}

std::array<int, 4> random_resized_crop_params(int width, int height, const std::array<double, 2>& scale,
                                              const std::array<double, 2>& ratio, Rng& rng) {
  OC_CHECK(width > 0 && height > 0, "image {}x{}", width, height);
  const double area = double(height) * width;
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * (scale[0] + (scale[1] - scale[0]) * rng.uniform());
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * rng.uniform());
    const int w = py_round(std::sqrt(target_area * aspect));
    const int h = py_round(std::sqrt(target_area / aspect));
    if (0 < w && w <= width && 0 < h && h <= height) {
      const int i = int(rng.below(uint64_t(height - h + 1)));
      const int j = int(rng.below(uint64_t(width - w + 1)));
      return {j, i, w, h};
    }
  }
  // Fallback: central crop with the aspect ratio clamped to the range.
  const double in_ratio = double(width) / double(height);
  const double rmin = std::min(ratio[0], ratio[1]), rmax = std::max(ratio[0], ratio[1]);
  int w = width, h = height;
  if (in_ratio < rmin) {
    h = py_round(w / rmin);
  } else if (in_ratio > rmax) {
    w = py_round(h * rmax);
  }
  // torchvision can round to 0 for extreme aspect ratios and then fails in PIL; keep a pixel.
  w = std::clamp(w, 1, width);
  h = std::clamp(h, 1, height);
  return {(width - w) / 2, (height - h) / 2, w, h};
}

Status parse_aug_cfg(const std::string& text, PreprocessCfg* cfg) {
  // Tokens are key=value separated by blanks; blanks inside (...) or [...] belong to the value.
  std::vector<std::string> tokens;
  std::string cur;
  int depth = 0;
  for (char ch : text) {
    if (ch == '(' || ch == '[') ++depth;
    if (ch == ')' || ch == ']') --depth;
    if ((ch == ' ' || ch == '\t' || ch == '\n') && depth == 0) {
      if (!cur.empty()) tokens.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  if (depth != 0) return Err{"--aug-cfg: unbalanced brackets in '" + text + "'"};

  PreprocessCfg next = *cfg;
  bool jitter_given = false;
  for (const std::string& tok : tokens) {
    auto eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) return Err{"--aug-cfg: expected key=value, got '" + tok + "'"};
    const std::string key = tok.substr(0, eq), value = tok.substr(eq + 1);
    if (key == "scale" || key == "ratio") {
      std::array<double, 2> v{};
      if (!parse_pair(value, &v)) return Err{"--aug-cfg: " + key + " wants a pair like (0.9, 1.0), got '" + value + "'"};
      if (!(v[0] > 0 && v[0] <= v[1])) return Err{"--aug-cfg: " + key + " wants 0 < min <= max, got '" + value + "'"};
      (key == "scale" ? next.scale : next.ratio) = v;
    } else if (key == "use_timm" || key == "naflex") {
      if (value != "False" && value != "false" && value != "0")
        return Err{"--aug-cfg: " + key + "=" + value + " (timm transforms) is not supported"};
    } else if (key == "color_jitter") {
      if (Status st = parse_color_jitter(value, &next.color.jitter); !st) return st;
      jitter_given = true;
    } else if (key == "color_jitter_prob" || key == "gray_scale_prob") {
      double p = 0;
      if (!parse_number(value, &p) || p < 0 || p > 1)
        return Err{"--aug-cfg: " + key + " wants a probability in [0, 1], got '" + value + "'"};
      (key == "color_jitter_prob" ? next.color.jitter_prob : next.color.gray_prob) = p;
    } else if (key == "re_prob" || key == "re_count") {
      return Err{"--aug-cfg: " + key + " belongs to timm's transforms (use_timm), which are not supported"};
    } else {
      return Err{"--aug-cfg: unknown key '" + key +
                 "' (known: scale, ratio, color_jitter, color_jitter_prob, gray_scale_prob)"};
    }
  }
  // OpenCLIP 2.24 asserts color_jitter with color_jitter_prob, and without the probability
  // leaves color_jitter unused (a warning): refused here rather than ignored.
  if (next.color.jitter_prob > 0 && !jitter_given)
    return Err{"--aug-cfg: color_jitter_prob needs color_jitter=(brightness, contrast, saturation, hue)"};
  if (jitter_given && next.color.jitter_prob == 0)
    return Err{"--aug-cfg: color_jitter has no effect without color_jitter_prob (OpenCLIP 2.24 ignores it with a "
               "warning): add color_jitter_prob=p"};
  *cfg = next;
  return Status::success();
}

}  // namespace oc
