// uint8 HWC image batches -> normalised fp32 CHW (ops/pixels.h). First ran on an H200 on 2026-12-04 (docs/CUDA.md).
// The division and subtraction are the IEEE round-to-nearest intrinsics, so the result is the
// contract's fp32 expression bit for bit whatever -prec-div / --use_fast_math say.
#include <cstdint>

#include "ops/cuda/kernels.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

struct Norm {
  float mean[3], std[3];
};

__global__ void normalize_images_kernel(float* out, const uint8_t* px, Norm n, int64_t B, int64_t plane) {
  GRID_STRIDE(i, B * plane) {  // one pixel: three bytes in, one float to each channel plane
    const int64_t b = i / plane, hw = i - b * plane;
    const uint8_t* p = px + i * 3;
    float* o = out + b * 3 * plane + hw;
    for (int c = 0; c < 3; ++c)
      o[c * plane] = __fdiv_rn(__fsub_rn(__fdiv_rn(float(p[c]), 255.0f), n.mean[c]), n.std[c]);
  }
}

}  // namespace

void normalize_images(float* out, const uint8_t* px, const float* mean, const float* std, int64_t B, int64_t S,
                      cudaStream_t s) {
  Norm n;
  for (int c = 0; c < 3; ++c) n.mean[c] = mean[c], n.std[c] = std[c];
  const int64_t plane = S * S;
  if (B * plane > 0) normalize_images_kernel<<<blocks_for(B * plane), kThreads, 0, s>>>(out, px, n, B, plane);
}

}  // namespace oc::ops::cuda
