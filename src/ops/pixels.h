// Image batches that cross to the backend as uint8 pixels, a quarter of the fp32 bytes
// (docs/CUDA.md, "Batches"): OpenCLIP's ToTensor + Normalize run on the backend.
#pragma once
#include <cstdint>
#include <span>

#include "ops/op_args.h"

namespace oc::ops {

// out[b, c, y, x] = (float(px[b, y, x, c]) / 255.0f - mean[c]) / std[c], evaluated in fp32 in
// exactly that order with IEEE rounding (torchvision's ToTensor then Normalize in float32; the
// loader's per-channel table, image/transform.cpp, holds the same values, so every backend
// gives the loader's fp32 images bit for bit). px [B, S, S, 3] uint8 (each image HWC, as
// resized); out [B, 3, S, S] fp32 (CHW, assigned); mean, std: 3 host floats each.
struct NormalizeImagesArgs {
  float* out;
  const uint8_t* px;
  std::span<const float> mean, std;
  int64_t B, S;
};

}  // namespace oc::ops
