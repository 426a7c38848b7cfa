// Mode-aware resize (see mode_resize.h), transcribing Pillow 9.4 Image.resize's dispatch.
#include "image/mode_resize.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "image/resample.h"

namespace oc {
namespace {

// Per-thread buffers: the data loader calls this per sample.
std::vector<uint8_t>& scratch(int which, size_t n) {
  thread_local std::vector<uint8_t> buf[2];
  buf[which].resize(n);
  return buf[which];
}

}  // namespace

void resize_window_rgb(const SourceView& src, int64_t out_w, int64_t out_h, Interp interp, int64_t wx, int64_t wy,
                       int ww, int wh, uint8_t* rgb) {
  const PixelView& v = src.px;
  OC_CHECK(v.channels == mode_channels(src.mode), "{} view with {} channels", mode_name(src.mode), v.channels);
  if (src.mode == PixelMode::RGB) return resample_window(v, out_w, out_h, interp, wx, wy, ww, wh, rgb);

  const int C = v.channels;
  const size_t n = size_t(ww) * wh;
  std::vector<uint8_t>& out = scratch(0, n * C);
  const bool same_size = out_w == v.width && out_h == v.height;
  if (same_size || src.mode == PixelMode::P || src.mode == PixelMode::Bit) {
    // A same-size resize is PIL's copy, and NEAREST at scale 1 is the identity.
    nearest_window(v, out_w, out_h, wx, wy, ww, wh, out.data());
  } else if (src.mode == PixelMode::RGBA || src.mode == PixelMode::LA) {
    std::vector<uint8_t>& pre = scratch(1, size_t(v.width) * v.height * C);
    const size_t row = size_t(v.width) * C;
    for (int y = 0; y < v.height; ++y) premultiply_alpha(v.row(y), size_t(v.width), C, pre.data() + y * row);
    const PixelView pv{pre.data(), v.width, v.height, C, row};
    resample_window(pv, out_w, out_h, interp, wx, wy, ww, wh, out.data());
    unpremultiply_alpha(out.data(), n, C);
    // A loader thread keeps its scratch; a rare huge image should not pin ~100 MB to it.
    if (pre.capacity() > (size_t(32) << 20)) std::vector<uint8_t>().swap(pre);
  } else {
    resample_window(v, out_w, out_h, interp, wx, wy, ww, wh, out.data());
  }
  pixels_to_rgb(src.mode, src.palette, out.data(), n, rgb);
}

std::array<uint8_t, 3> fill_rgb(const SourceView& src, int fill) {
  const uint8_t f = uint8_t(std::clamp(fill, 0, 255));
  const uint8_t px[4] = {f, f, f, f};
  std::array<uint8_t, 3> out{};
  pixels_to_rgb(src.mode, src.palette, px, 1, out.data());
  return out;
}

}  // namespace oc
