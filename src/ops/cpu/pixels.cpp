// uint8 HWC images -> normalised fp32 CHW through one 256-entry table per channel, whose
// entries are the contract's expression (ops/pixels.h) evaluated once: the same bits as
// evaluating it per pixel, without a division per pixel.
#include "ops/cpu/pixels.h"

#include "core/check.h"

namespace oc::ops {

void normalize_images(float* out, const uint8_t* px, const float* mean, const float* std, int64_t B, int64_t S) {
  float lut[3][256];
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 256; ++i) lut[c][i] = (float(i) / 255.0f - mean[c]) / std[c];
  const int64_t plane = S * S;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const uint8_t* p = px + b * plane * 3;
    float* r = out + b * 3 * plane;
    float* g = r + plane;
    float* bl = g + plane;
    for (int64_t i = 0; i < plane; ++i) {
      r[i] = lut[0][p[3 * i]];
      g[i] = lut[1][p[3 * i + 1]];
      bl[i] = lut[2][p[3 * i + 2]];
    }
  }
}

}  // namespace oc::ops

// The cpu backend's entry point for this op (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const NormalizeImagesArgs& a) {
  OC_CHECK(a.mean.size() == 3 && a.std.size() == 3, "normalize_images: {} means and {} stds, want 3", a.mean.size(),
           a.std.size());
  ops::normalize_images(a.out, a.px, a.mean.data(), a.std.data(), a.B, a.S);
}
}  // namespace oc::ops::cpu
