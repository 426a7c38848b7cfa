// Device helpers shared by the attention kernels (kernels_attention.cu, kernels_xattn.cu; the
// convolution's im2col takes `rnd` from here too):
// loads and stores of fp32 or bf16 elements, the amp_bf16 rounding of an operand, a NaN-sticky
// max and butterfly warp reductions (every lane ends with the same value, in a fixed order).
#pragma once
#include <cuda_bf16.h>

#include <cmath>

#include "ops/cuda/kernels.h"

namespace oc::ops::cuda {

__device__ inline float ld(const float* p, int64_t i) { return p[i]; }
__device__ inline float ld(const bf16_t* p, int64_t i) {
  return __uint_as_float(uint32_t(p[i]) << 16);  // bf16 bits -> fp32, exact
}
__device__ inline float rnd(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
template <bool Round>
__device__ inline float op(float x) {
  return Round ? rnd(x) : x;
}
__device__ inline void st(float* p, int64_t i, float v) { p[i] = v; }
__device__ inline void st(bf16_t* p, int64_t i, float v) {
  const __nv_bfloat16 h = __float2bfloat16_rn(v);
  p[i] = *reinterpret_cast<const bf16_t*>(&h);
}
// max that returns NaN once either side is NaN (fmaxf would drop it).
__device__ inline float nan_max(float a, float b) { return (isnan(a) || isnan(b)) ? NAN : fmaxf(a, b); }
__device__ inline float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace oc::ops::cuda
