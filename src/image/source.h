// Decoded images in the mode PIL opens them in (Image.open(f).mode), so the transforms can
// resize and crop before convert('RGB') as OpenCLIP's do (transform.py: Resize/CenterCrop or
// RandomResizedCrop, then _convert_to_rgb). PIL's resize depends on the mode, see
// mode_resize.h. Conversions here are PIL 9.4's Convert.c, checked against PIL itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image/image.h"

namespace oc {

// The PIL modes the decoders keep. Bit is PIL's "1" (stored as 0/255, one byte a pixel, as
// PIL stores it). Other PIL modes (16-bit gray "I") are decoded to L after clipping at 255,
// which is what convert('RGB') would give before resizing (see codec_png.cpp).
enum class PixelMode : uint8_t { L, LA, RGB, RGBA, P, Bit, CMYK };

int mode_channels(PixelMode m);     // bytes per pixel: L/P/Bit 1, LA 2, RGB 3, RGBA/CMYK 4
const char* mode_name(PixelMode m);  // PIL's name: "L", "LA", "RGB", "RGBA", "P", "1", "CMYK"

struct SourceImage {
  PixelMode mode = PixelMode::RGB;
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;   // height * width * mode_channels(mode), interleaved
  std::vector<uint8_t> palette;  // P only: 256 RGB entries (768 bytes)
};

// A rectangle of an interleaved 8-bit image (no copy).
struct PixelView {
  const uint8_t* data = nullptr;
  int width = 0, height = 0, channels = 3;
  size_t stride = 0;  // bytes between rows
  static PixelView of(const ImageU8& img) { return {img.rgb.data(), img.width, img.height, 3, size_t(img.width) * 3}; }
  static PixelView of(const SourceImage& img) {
    const int c = mode_channels(img.mode);
    return {img.pixels.data(), img.width, img.height, c, size_t(img.width) * c};
  }
  PixelView sub(int x, int y, int w, int h) const {
    return {data + size_t(y) * stride + size_t(x) * channels, w, h, channels, stride};
  }
  const uint8_t* row(int y) const { return data + size_t(y) * stride; }
};

// A view plus what its bytes mean: the input of the mode-aware resize.
struct SourceView {
  PixelMode mode = PixelMode::RGB;
  const uint8_t* palette = nullptr;  // P: 768 bytes
  PixelView px;
  static SourceView of(const ImageU8& img) { return {PixelMode::RGB, nullptr, PixelView::of(img)}; }
  static SourceView of(const SourceImage& img) {
    return {img.mode, img.palette.empty() ? nullptr : img.palette.data(), PixelView::of(img)};
  }
  SourceView sub(int x, int y, int w, int h) const { return {mode, palette, px.sub(x, y, w, h)}; }
};

// Err-free check of an image's sizes (pixels and palette): false when inconsistent.
bool source_image_valid(const SourceImage& img);

// PIL's convert('RGB') of n pixels of `mode` (l2rgb, la2rgb, rgba2rgb, p2rgb, bit2rgb,
// cmyk2rgb): alpha is dropped, never composited; tRNS plays no part.
void pixels_to_rgb(PixelMode mode, const uint8_t* palette, const uint8_t* in, size_t n, uint8_t* out);
ImageU8 to_rgb(SourceImage&& img);  // moves the pixels when the mode is RGB
ImageU8 to_rgb(const SourceImage& img);

// PIL's RGBA -> RGBa and LA -> La (premultiply with MULDIV255) and back (floor(255*v/a),
// clipped, v kept where a is 0 or 255), on n interleaved pixels of `channels` (4 or 2; the
// alpha is the last byte).
void premultiply_alpha(const uint8_t* in, size_t n, int channels, uint8_t* out);
void unpremultiply_alpha(uint8_t* px, size_t n, int channels);

// A 256-entry PIL palette from `n` RGB triplets: entries past n are the gray ramp (i, i, i),
// which is what PIL's putpalette leaves there (an index past a short PLTE shows as gray).
std::vector<uint8_t> pil_palette(const uint8_t* rgb, int n);

}  // namespace oc
