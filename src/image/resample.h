// PIL's ImagingResample (Pillow 9.4 Resample.c) for 8-bit RGB: separable convolution,
// horizontal pass first, filter support scaled by the downscale factor (antialias), 22-bit
// fixed-point coefficients, clip to uint8 after each pass. Bit-exact with PIL's
// Image.resize(size, BICUBIC|BILINEAR) and fast: coefficient tables with equal-length
// windows, AVX2 passes, and only the requested output window is computed (a center crop
// of a resize costs only the crop).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image/image.h"
#include "image/transform.h"

namespace oc {

// A rectangle of an interleaved RGB image (no copy).
struct RgbView {
  const uint8_t* data = nullptr;
  int width = 0, height = 0;
  size_t stride = 0;  // bytes between rows
  static RgbView of(const ImageU8& img) { return {img.rgb.data(), img.width, img.height, size_t(img.width) * 3}; }
  RgbView sub(int x, int y, int w, int h) const { return {data + size_t(y) * stride + size_t(x) * 3, w, h, stride}; }
};

// One axis of the filter for outputs first .. first+count-1: output first+i reads inputs
// start[i] .. start[i]+taps-1 with weights k[i*taps ..]. Windows are shifted to fit inside
// [0, in_size) and padded with zero weights so every output has the same number of taps
// (PIL's per-output windows give the same sums).
struct AxisCoeffs {
  int in_size = 0, taps = 0;
  int64_t out_size = 0, first = 0;
  std::vector<int> start;
  std::vector<int32_t> k;
};

inline constexpr int kResamplePrecisionBits = 32 - 8 - 2;  // PIL's PRECISION_BITS

AxisCoeffs resample_coeffs(int in_size, int64_t out_size, int64_t first, int count, Interp interp);

// Resizes `src` to out_w x out_h and writes the window [wx, wx+ww) x [wy, wy+wh) of the
// result to dst (ww*wh*3 bytes, rows contiguous). Same pixels as resizing fully and then
// cropping; costs only the window, however large out_w x out_h is.
void resample_window(const RgbView& src, int64_t out_w, int64_t out_h, Interp interp, int64_t wx, int64_t wy,
                     int ww, int wh, uint8_t* dst);

// Straightforward scalar transcription of PIL's loops, for tests of the fast path.
void resample_window_reference(const RgbView& src, int out_w, int out_h, Interp interp, int wx, int wy, int ww,
                               int wh, uint8_t* dst);

}  // namespace oc
