// Launch helpers shared by the kernel files: the block size, a capped grid for grid-stride
// loops, and a block-wide sum in double (fixed order: deterministic).
#pragma once
#include <cstdint>

namespace oc::ops::cuda {

constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return int(b < 65535 * 8 ? (b < 1 ? 1 : b) : 65535 * 8);
}

#define GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// The sum of v over the block (blockDim.x <= kThreads, a power of two); every thread gets it.
__device__ inline double block_sum(double v) {
  __shared__ double sh[kThreads];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

}  // namespace oc::ops::cuda
