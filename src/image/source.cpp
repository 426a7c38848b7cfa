// PIL 9.4 Convert.c transcribed for the modes source.h keeps. Each conversion is checked
// against PIL over every input value by tests/image/parity_test.cpp (ImageModeParity).
#include "image/source.h"

#include <cstring>

#include "core/check.h"

namespace oc {
namespace {

// PIL's MULDIV255(a, b): a*b/255 rounded, without a division.
inline int muldiv255(int a, int b) {
  const int t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

inline uint8_t clip8(int v) { return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v); }

}  // namespace

int mode_channels(PixelMode m) {
  switch (m) {
    case PixelMode::L:
    case PixelMode::P:
    case PixelMode::Bit: return 1;
    case PixelMode::LA: return 2;
    case PixelMode::RGB: return 3;
    case PixelMode::RGBA:
    case PixelMode::CMYK: return 4;
  }
  return 3;
}

const char* mode_name(PixelMode m) {
  switch (m) {
    case PixelMode::L: return "L";
    case PixelMode::LA: return "LA";
    case PixelMode::RGB: return "RGB";
    case PixelMode::RGBA: return "RGBA";
    case PixelMode::P: return "P";
    case PixelMode::Bit: return "1";
    case PixelMode::CMYK: return "CMYK";
  }
  return "?";
}

bool source_image_valid(const SourceImage& img) {
  return img.width > 0 && img.height > 0 &&
         img.pixels.size() == size_t(img.width) * img.height * mode_channels(img.mode) &&
         (img.mode != PixelMode::P || img.palette.size() == 768);
}

void pixels_to_rgb(PixelMode mode, const uint8_t* palette, const uint8_t* in, size_t n, uint8_t* out) {
  switch (mode) {
    case PixelMode::RGB: std::memcpy(out, in, n * 3); return;
    case PixelMode::L:  // l2rgb
      for (size_t i = 0; i < n; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[i];
      return;
    case PixelMode::LA:  // la2rgb: the gray value, alpha dropped
      for (size_t i = 0; i < n; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[2 * i];
      return;
    case PixelMode::RGBA:  // rgba2rgb
      for (size_t i = 0; i < n; ++i) std::memcpy(out + 3 * i, in + 4 * i, 3);
      return;
    case PixelMode::P:  // p2rgb: palette lookup
      OC_CHECK(palette, "P image without a palette");
      for (size_t i = 0; i < n; ++i) std::memcpy(out + 3 * i, palette + 3 * size_t(in[i]), 3);
      return;
    case PixelMode::Bit:  // bit2rgb: any non-zero byte is white
      for (size_t i = 0; i < n; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[i] ? 255 : 0;
      return;
    case PixelMode::CMYK:  // cmyk2rgb: nk - nk*c/255 per channel, nk = 255 - k
      for (size_t i = 0; i < n; ++i, in += 4, out += 3) {
        const int nk = 255 - in[3];
        out[0] = clip8(nk - muldiv255(in[0], nk));
        out[1] = clip8(nk - muldiv255(in[1], nk));
        out[2] = clip8(nk - muldiv255(in[2], nk));
      }
      return;
  }
}

ImageU8 to_rgb(SourceImage&& img) {
  OC_CHECK(source_image_valid(img), "bad {} image {}x{} ({} bytes)", mode_name(img.mode), img.width, img.height,
           img.pixels.size());
  ImageU8 out;
  out.width = img.width;
  out.height = img.height;
  if (img.mode == PixelMode::RGB) {
    out.rgb = std::move(img.pixels);
  } else {
    out.rgb.resize(size_t(img.width) * img.height * 3);
    pixels_to_rgb(img.mode, img.palette.data(), img.pixels.data(), size_t(img.width) * img.height, out.rgb.data());
  }
  return out;
}

ImageU8 to_rgb(const SourceImage& img) {
  SourceImage copy = img;
  return to_rgb(std::move(copy));
}

void premultiply_alpha(const uint8_t* in, size_t n, int channels, uint8_t* out) {
  OC_CHECK(channels == 2 || channels == 4, "premultiply: {} channels", channels);
  const int c = channels - 1;  // colour bytes before the alpha
  for (size_t i = 0; i < n; ++i, in += channels, out += channels) {
    const int a = in[c];
    for (int k = 0; k < c; ++k) out[k] = uint8_t(muldiv255(in[k], a));  // rgbA2rgba, la2lA
    out[c] = uint8_t(a);
  }
}

void unpremultiply_alpha(uint8_t* px, size_t n, int channels) {
  OC_CHECK(channels == 2 || channels == 4, "unpremultiply: {} channels", channels);
  const int c = channels - 1;
  for (size_t i = 0; i < n; ++i, px += channels) {
    const int a = px[c];
    if (a == 0 || a == 255) continue;  // rgba2rgbA / lA2la keep the value as it is
    for (int k = 0; k < c; ++k) px[k] = clip8(255 * px[k] / a);
  }
}

std::vector<uint8_t> pil_palette(const uint8_t* rgb, int n) {
  OC_CHECK(n >= 0 && n <= 256, "palette of {} entries", n);
  std::vector<uint8_t> p(768);
  for (int i = 0; i < 256; ++i) p[3 * i] = p[3 * i + 1] = p[3 * i + 2] = uint8_t(i);
  if (n > 0) std::memcpy(p.data(), rgb, size_t(n) * 3);
  return p;
}

}  // namespace oc
