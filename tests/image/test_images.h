// Deterministic test pictures for the image tests and benchmarks: gradients, a hard-edged
// block and hash noise, so codecs and resamplers see both smooth areas and sharp edges.
#pragma once
#include <cstdint>

#include "image/image.h"

namespace oc::testing_images {

inline ImageU8 make_rgb(int w, int h, uint32_t seed = 1) {
  ImageU8 img;
  img.width = w;
  img.height = h;
  img.rgb.resize(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) {
        uint32_t n = (uint32_t(x) * 73856093u) ^ (uint32_t(y) * 19349663u) ^ (uint32_t(c + seed) * 83492791u);
        n ^= n >> 13;
        n *= 0x5bd1e995u;
        n ^= n >> 15;
        int v = (c == 0 ? x * 255 / (w > 1 ? w - 1 : 1) : c == 1 ? y * 255 / (h > 1 ? h - 1 : 1) : (x + y) % 256);
        v += int(n % 41) - 20;
        if (x > w / 3 && x < w / 2 && y > h / 3 && y < h / 2) v = ((x / 3 + y / 3) % 2) * 255;
        img.rgb[(size_t(y) * w + x) * 3 + c] = uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
      }
  return img;
}

}  // namespace oc::testing_images
