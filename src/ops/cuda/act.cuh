// Device helpers shared by the kernel files: GELU/QuickGELU and their derivatives (as the
// reference, ops/ref/dense.cpp) and the bf16 rounding of a float.
#pragma once
#include <cuda_bf16.h>

#include "ops/cuda/kernels.h"

namespace oc::ops::cuda {

// GELU as the reference: x * Phi(x) with erfc; QuickGELU x * sigmoid(1.702 x). act as ops::Act.
__device__ inline float act_f(float x, int act) {
  if (act == 0) return x * 0.5f * erfcf(-x * 0.70710678118654752f);
  return x / (1.0f + expf(-1.702f * x));
}
__device__ inline float act_grad(float x, int act) {
  if (act == 0) return 0.5f * erfcf(-x * 0.70710678118654752f) + x * expf(-0.5f * x * x) * 0.39894228040143268f;
  const float sg = 1.0f / (1.0f + expf(-1.702f * x));
  return sg + 1.702f * x * sg * (1.0f - sg);
}
__device__ inline bf16_t to_bf16_bits(float x) {
  __nv_bfloat16 h = __float2bfloat16_rn(x);  // round to nearest even; NaN stays NaN
  return *reinterpret_cast<bf16_t*>(&h);
}

}  // namespace oc::ops::cuda
