// Elementwise CUDA kernels: fill, add, scale, GELU/QuickGELU, bf16 casts, AdamW, and the
// reductions of the optimizer step (sum of squares, all-finite). Grid-stride loops, 256 threads.
// Reductions run over a fixed grid and combine in a fixed order, so results are bitwise
// reproducible run to run. First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include <cuda_bf16.h>

#include "ops/cuda/act.cuh"
#include "ops/cuda/kernels.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

__global__ void k_fill(float* x, int64_t n, float v) { GRID_STRIDE(i, n) x[i] = v; }
__global__ void k_add(float* y, const float* x, int64_t n) { GRID_STRIDE(i, n) y[i] += x[i]; }
__global__ void k_scale(float* x, int64_t n, float a) { GRID_STRIDE(i, n) x[i] *= a; }
__global__ void k_act(float* out, const float* inp, int64_t n, int act) { GRID_STRIDE(i, n) out[i] = act_f(inp[i], act); }
__global__ void k_act_bwd(float* dinp, const float* dout, const float* inp, int64_t n, int act) {
  GRID_STRIDE(i, n) dinp[i] = dout[i] * act_grad(inp[i], act);
}
__global__ void k_act_rows(float* C, int64_t ldc, int64_t M, int64_t N, int act) {
  GRID_STRIDE(i, M * N) {
    float& c = C[(i / N) * ldc + i % N];
    c = act_f(c, act);
  }
}
__global__ void k_rows_to_bf16(bf16_t* out, int64_t ldo, const float* C, int64_t ldc, int64_t M, int64_t N, int act) {
  GRID_STRIDE(i, M * N) {
    const float c = C[(i / N) * ldc + i % N];
    out[(i / N) * ldo + i % N] = to_bf16_bits(act < 0 ? c : act_f(c, act));
  }
}
__global__ void k_cast_bf16(bf16_t* dst, const float* src, int64_t n) { GRID_STRIDE(i, n) dst[i] = to_bf16_bits(src[i]); }
__global__ void k_round_bf16(float* dst, const float* src, int64_t n) {
  GRID_STRIDE(i, n) dst[i] = __bfloat162float(__float2bfloat16_rn(src[i]));
}

// The float operations of ops/ref/optim.cpp (torch's single-tensor AdamW), in the same order.
__global__ void k_adamw(float* p, const float* g, float* m, float* v, const AdamWChunk* chunks, float lr,
                        float step_size, float bc2_sqrt, float beta1, float beta2, float one_m_b1, float one_m_b2,
                        float eps) {
  const AdamWChunk ch = chunks[blockIdx.x];
  const float decay = float(1.0 - double(lr) * double(ch.wd));
  for (int j = threadIdx.x; j < ch.n; j += blockDim.x) {
    const int64_t i = ch.offset + j;
    const float gi = g[i];
    const float mi = m[i] * beta1 + one_m_b1 * gi;
    const float vi = v[i] * beta2 + one_m_b2 * gi * gi;
    m[i] = mi, v[i] = vi;
    const float denom = __fdiv_rn(sqrtf(vi), bc2_sqrt) + eps;
    p[i] = __fsub_rn(__fmul_rn(p[i], decay), __fmul_rn(step_size, __fdiv_rn(mi, denom)));
  }
}

__global__ void k_sumsq_partial(double* partial, const float* x, int64_t n) {
  double s = 0;
  GRID_STRIDE(i, n) s += double(x[i]) * double(x[i]);
  s = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
__global__ void k_sum_final(double* out, const double* partial, int n) {
  double s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
  s = block_sum(s);
  if (threadIdx.x == 0) *out = s;
}
__global__ void k_nonfinite(int* flag, const float* x, int64_t n) {
  GRID_STRIDE(i, n) if (!isfinite(x[i])) *flag = 1;  // benign race: every writer stores 1
}

}  // namespace

void fill(float* x, int64_t n, float v, cudaStream_t s) {
  if (n > 0) k_fill<<<blocks_for(n), kThreads, 0, s>>>(x, n, v);
}
void add_inplace(float* y, const float* x, int64_t n, cudaStream_t s) {
  if (n > 0) k_add<<<blocks_for(n), kThreads, 0, s>>>(y, x, n);
}
void scale_inplace(float* x, int64_t n, float a, cudaStream_t s) {
  if (n > 0) k_scale<<<blocks_for(n), kThreads, 0, s>>>(x, n, a);
}
void act_forward(float* out, const float* inp, int64_t n, int act, cudaStream_t s) {
  if (n > 0) k_act<<<blocks_for(n), kThreads, 0, s>>>(out, inp, n, act);
}
void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, int act, cudaStream_t s) {
  if (n > 0) k_act_bwd<<<blocks_for(n), kThreads, 0, s>>>(dinp, dout, inp, n, act);
}
void act_rows_inplace(float* C, int64_t ldc, int64_t M, int64_t N, int act, cudaStream_t s) {
  if (M * N > 0) k_act_rows<<<blocks_for(M * N), kThreads, 0, s>>>(C, ldc, M, N, act);
}
void rows_to_bf16(bf16_t* out, int64_t ldo, const float* C, int64_t ldc, int64_t M, int64_t N, int act,
                  cudaStream_t s) {
  if (M * N > 0) k_rows_to_bf16<<<blocks_for(M * N), kThreads, 0, s>>>(out, ldo, C, ldc, M, N, act);
}
void cast_to_bf16(bf16_t* dst, const float* src, int64_t n, cudaStream_t s) {
  if (n > 0) k_cast_bf16<<<blocks_for(n), kThreads, 0, s>>>(dst, src, n);
}
void round_bf16_f32(float* dst, const float* src, int64_t n, cudaStream_t s) {
  if (n > 0) k_round_bf16<<<blocks_for(n), kThreads, 0, s>>>(dst, src, n);
}
void adamw_chunks(float* p, const float* g, float* m, float* v, const AdamWChunk* chunks, int64_t nchunks, float lr,
                  float step_size, float bc2_sqrt, float beta1, float beta2, float one_m_b1, float one_m_b2, float eps,
                  cudaStream_t s) {
  if (nchunks > 0)
    k_adamw<<<unsigned(nchunks), kThreads, 0, s>>>(p, g, m, v, chunks, lr, step_size, bc2_sqrt, beta1, beta2, one_m_b1,
                                                   one_m_b2, eps);
}
void sum_squares(double* out, double* partial, const float* x, int64_t n, cudaStream_t s) {
  k_sumsq_partial<<<kReduceBlocks, kThreads, 0, s>>>(partial, x, n);
  k_sum_final<<<1, kThreads, 0, s>>>(out, partial, kReduceBlocks);
}
void count_nonfinite(int* flag, const float* x, int64_t n, cudaStream_t s) {
  if (n > 0) k_nonfinite<<<blocks_for(n), kThreads, 0, s>>>(flag, x, n);
}

}  // namespace oc::ops::cuda
