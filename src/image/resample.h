// PIL's ImagingResample (Pillow 9.4 Resample.c) for 8-bit images of 1 to 4 interleaved
// channels: separable convolution, horizontal pass first, filter support scaled by the
// downscale factor (antialias), 22-bit fixed-point coefficients, clip to uint8 after each
// pass, every channel alike. Bit-exact with PIL's Image.resize(size, BICUBIC|BILINEAR) on
// L, LA->La, RGB, RGBA->RGBa and CMYK images, and fast: coefficient tables with equal-length
// windows, AVX2 horizontal passes for 3 and 4 channels, and only the requested output
// window is computed (a center crop of a resize costs only the crop). Also PIL's NEAREST
// resize (what it uses for P and 1 images whatever filter is asked).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image/source.h"
#include "image/transform.h"

namespace oc {

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
// result to dst (ww*wh*channels bytes, rows contiguous). Same pixels as resizing fully and
// then cropping; costs only the window, however large out_w x out_h is.
void resample_window(const PixelView& src, int64_t out_w, int64_t out_h, Interp interp, int64_t wx, int64_t wy,
                     int ww, int wh, uint8_t* dst);

// Straightforward scalar transcription of PIL's loops, for tests of the fast path.
void resample_window_reference(const PixelView& src, int out_w, int out_h, Interp interp, int wx, int wy, int ww,
                               int wh, uint8_t* dst);

// PIL's NEAREST resize (Geometry.c ImagingScaleAffine, reached through ImagingTransform):
// output x reads input floor(xo) where xo starts at scale/2 and grows by scale = in/out per
// pixel, accumulated in double exactly as PIL does (the running sum and scale*(x+0.5)
// round differently for many sizes). Window as resample_window; any channel count.
void nearest_window(const PixelView& src, int64_t out_w, int64_t out_h, int64_t wx, int64_t wy, int ww, int wh,
                    uint8_t* dst);
// The input index of each output first .. first+count-1 of one axis (exposed for tests).
std::vector<int> nearest_index(int in_size, int64_t out_size, int64_t first, int count);

}  // namespace oc
