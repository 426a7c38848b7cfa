// The depthwise convolution of ConvNeXt (ops/dwconv.h) and the bias of a convolution
// (ops/conv.h), channels-last: one thread per output element, its taps summed in a fixed order
// (forward, backward data); the weight gradient as column sums over a grid of (weight
// element, row chunk) partials in double, the chunks then added in order (kernels.h,
// column_chunks): deterministic, no atomics. The arithmetic of ops/cpu/dwconv.cpp.
// Compile-checked only: not yet run on a GPU.
#include "ops/cuda/kernels.h"
#include "ops/cuda/kernels_conv.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

// dst[n, y, x, c] = init[c] + sum over taps of src[n, y - off + i, x - off + j, c] * w[c, tap(i, j)],
// tap = flip ? (K-1-i)*K + (K-1-j) : i*K + j; src [N, SH, SW, C], dst [N, DH, DW, C].
__global__ void k_dw_correlate(float* dst, int64_t DH, int64_t DW, const float* src, int64_t SH, int64_t SW,
                               const float* w, const float* init, int64_t N, int64_t C, int64_t K, int64_t off,
                               bool flip) {
  GRID_STRIDE(e, N * DH * DW * C) {
    const int64_t c = e % C, x = (e / C) % DW, y = (e / (C * DW)) % DH, n = e / (C * DW * DH);
    float sum = init ? init[c] : 0.0f;
    for (int64_t i = 0; i < K; ++i) {
      const int64_t h = y - off + i;
      if (h < 0 || h >= SH) continue;
      for (int64_t j = 0; j < K; ++j) {
        const int64_t v = x - off + j;
        if (v < 0 || v >= SW) continue;
        const int64_t tap = flip ? (K - 1 - i) * K + (K - 1 - j) : i * K + j;
        sum += src[((n * SH + h) * SW + v) * C + c] * w[c * K * K + tap];
      }
    }
    dst[e] = sum;
  }
}

// part[chunk, c*K*K + tap] = the sum over the chunk's output rows of dout * inp at the tap.
__global__ void k_dw_dweight_part(double* part, const float* dout, const float* inp, int64_t N, int64_t H, int64_t W,
                                  int64_t C, int64_t K, int64_t pad) {
  const int64_t KK = K * K, e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (e >= C * KK) return;
  const int64_t c = e / KK, i = (e % KK) / K, j = e % K, OH = H + 2 * pad - K + 1, OW = W + 2 * pad - K + 1;
  int64_t r0, r1;
  chunk_rows(N * OH * OW, &r0, &r1);
  double s = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t ow = r % OW, oh = (r / OW) % OH, n = r / (OW * OH);
    const int64_t h = oh - pad + i, v = ow - pad + j;
    if (h >= 0 && h < H && v >= 0 && v < W) s += double(dout[r * C + c]) * double(inp[((n * H + h) * W + v) * C + c]);
  }
  part[blockIdx.y * C * KK + e] = s;
}

__global__ void k_add_bias_rows(float* out, const float* bias, int64_t rows, int64_t C) {
  GRID_STRIDE(e, rows * C) out[e] += bias[e % C];
}

}  // namespace

void dwconv_correlate(float* dst, int64_t DH, int64_t DW, const float* src, int64_t SH, int64_t SW, const float* w,
                      const float* init, int64_t N, int64_t C, int64_t K, int64_t off, bool flip, cudaStream_t s) {
  const int64_t n = N * DH * DW * C;
  if (n > 0) k_dw_correlate<<<blocks_for(n), kThreads, 0, s>>>(dst, DH, DW, src, SH, SW, w, init, N, C, K, off, flip);
}

void dwconv_dweight(float* dweight, double* partial, const float* dout, const float* inp, int64_t N, int64_t H,
                    int64_t W, int64_t C, int64_t K, int64_t pad, cudaStream_t s) {
  const int64_t cols = C * K * K, rows = N * (H + 2 * pad - K + 1) * (W + 2 * pad - K + 1);
  const int chunks = column_chunks(rows);
  const dim3 grid(unsigned((cols + kThreads - 1) / kThreads), unsigned(chunks));
  k_dw_dweight_part<<<grid, kThreads, 0, s>>>(partial, dout, inp, N, H, W, C, K, pad);
  add_column_partials(dweight, partial, chunks, cols, s);
}

void add_bias_rows(float* out, const float* bias, int64_t rows, int64_t C, cudaStream_t s) {
  if (rows * C > 0) k_add_bias_rows<<<blocks_for(rows * C), kThreads, 0, s>>>(out, bias, rows, C);
}

}  // namespace oc::ops::cuda
