// Device helpers shared by the kernel files: GELU/QuickGELU/GELU-tanh and their derivatives (as the
// reference, ops/ref/dense.cpp) and the bf16 rounding of a float.
#pragma once
#include <cuda_bf16.h>

#include "ops/cuda/kernels.h"

namespace oc::ops::cuda {

// The sigmoid gate z(x) (and dz/dx) of QuickGELU (1.702 x) and of GELU's tanh approximation
// (2u = x (a + b x^2): 0.5 x (1 + tanh(u)) = x sigmoid(2u), as ops/cpu/activation.cpp).
__device__ inline float act_gate(float x, int act, float* dz) {
  if (act == 1) return *dz = 1.702f, 1.702f * x;
  constexpr float a = 1.5957691216057307f, b = 1.5957691216057307f * 0.044715f;  // a = 2 sqrt(2/pi)
  *dz = a + 3.0f * b * x * x;
  return x * (a + b * x * x);
}
// GELU as the reference: x * Phi(x) with erfc; the gated ones x * sigmoid(z). act as ops::Act
// (0 GELU, 1 QuickGELU, 2 GELU tanh).
__device__ inline float act_f(float x, int act) {
  if (act == 0) return x * 0.5f * erfcf(-x * 0.70710678118654752f);
  float dz;
  return x / (1.0f + expf(-act_gate(x, act, &dz)));
}
__device__ inline float act_grad(float x, int act) {
  if (act == 0) return 0.5f * erfcf(-x * 0.70710678118654752f) + x * expf(-0.5f * x * x) * 0.39894228040143268f;
  float dz;
  const float sg = 1.0f / (1.0f + expf(-act_gate(x, act, &dz)));
  return sg + dz * x * sg * (1.0f - sg);
}
__device__ inline bf16_t to_bf16_bits(float x) {
  __nv_bfloat16 h = __float2bfloat16_rn(x);  // round to nearest even; NaN stays NaN
  return *reinterpret_cast<bf16_t*>(&h);
}

}  // namespace oc::ops::cuda
