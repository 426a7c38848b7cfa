// Reference ToTensor + Normalize of uint8 image batches: the contract's fp32 expression per
// pixel (no sums: nothing is evaluated in double).
#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

void run(const NormalizeImagesArgs& a) {
  const auto& [out, px, mean, std, B, S] = a;
  OC_CHECK(mean.size() == 3 && std.size() == 3, "normalize_images: {} means and {} stds, want 3", mean.size(),
           std.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t y = 0; y < S; ++y)
        for (int64_t x = 0; x < S; ++x) {
          const float v = float(px[((b * S + y) * S + x) * 3 + c]);
          out[((b * 3 + c) * S + y) * S + x] = (v / 255.0f - mean[size_t(c)]) / std[size_t(c)];
        }
}

}  // namespace oc::ops::ref
