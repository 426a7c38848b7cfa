// Launch helpers shared by the kernel files: the block size, a capped grid for grid-stride
// loops, a row chunk of a column-sum grid, and a block-wide sum in double (fixed order:
// deterministic).
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

// Rows [r0, r1) of chunk blockIdx.y of M rows split into gridDim.y chunks (kernels.h,
// column_chunks: the parallel, fixed-order column sums).
__device__ inline void chunk_rows(int64_t M, int64_t* r0, int64_t* r1) {
  const int64_t rows = (M + gridDim.y - 1) / gridDim.y;
  *r0 = blockIdx.y * rows;
  *r1 = *r0 + rows < M ? *r0 + rows : M;
}

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
