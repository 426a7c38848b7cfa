// The fused amp_bf16 passes (ops/bf16_ops.h): LayerNorm and residual + LayerNorm with a bf16
// output (one block per row, statistics in double as kernels_rows.cu), GELU forward to bf16,
// and the column passes (GELU backward, bias gradient) that write a bf16 copy of d and add its
// column sums to the bias gradient. Column sums: a grid of (column block, row chunk) writes
// double partial sums, a second kernel adds the chunks in order: parallel and deterministic.
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/act.cuh"
#include "ops/cuda/kernels_fused.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

// One row: (add x into xm first when x is non-null), LayerNorm statistics in double, bf16 out.
// Every loop strides the row the same way, so a thread reads back only what it wrote.
__global__ void k_ln_fwd_bf16(float* xm, bf16_t* out, float* mean, float* rstd, const float* x, const float* w,
                              const float* b, int64_t C, double eps) {
  const int64_t r = blockIdx.x;
  float* v = xm + r * C;
  double s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    if (x) v[c] += x[r * C + c];
    s += v[c];
  }
  const double mu = block_sum(s) / double(C);
  double q = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) q += (v[c] - mu) * (v[c] - mu);
  const double rs = 1.0 / sqrt(block_sum(q) / double(C) + eps);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    out[r * C + c] = to_bf16_bits(float((v[c] - mu) * rs * w[c] + b[c]));
  if (threadIdx.x == 0) {
    if (mean) mean[r] = float(mu);
    if (rstd) rstd[r] = float(rs);
  }
}

__global__ void k_act_fwd_bf16(bf16_t* out, const float* inp, int64_t n, int act) {
  GRID_STRIDE(i, n) out[i] = to_bf16_bits(act_f(inp[i], act));
}

// Block (column block x, row chunk y): thread = column c; rows of chunk y in order (the same
// split as kernels_rows.cu's parameter-gradient sums).
__global__ void k_column_pass(int kind, bf16_t* d16, bf16_t* act16, double* partial, const float* dout,
                              const float* inp, int64_t M, int64_t N, int act) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= N) return;
  const int64_t rows = (M + gridDim.y - 1) / gridDim.y, r0 = blockIdx.y * rows;
  const int64_t r1 = r0 + rows < M ? r0 + rows : M;
  double s = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t i = r * N + c;
    float d = dout[i];
    if (kind >= 1) d *= act_grad(inp[i], act);
    if (kind == 2) act16[i] = to_bf16_bits(act_f(inp[i], act));
    d16[i] = to_bf16_bits(d);
    s += d;
  }
  if (partial) partial[blockIdx.y * N + c] = s;
}

__global__ void k_add_partials(float* dst, const double* partial, int chunks, int64_t N) {
  GRID_STRIDE(c, N) {
    double s = 0;
    for (int k = 0; k < chunks; ++k) s += partial[k * N + c];
    dst[c] = float(dst[c] + s);
  }
}

}  // namespace

void add_column_partials(float* dst, const double* partial, int chunks, int64_t N, cudaStream_t s) {
  if (N > 0) k_add_partials<<<blocks_for(N), kThreads, 0, s>>>(dst, partial, chunks, N);
}

void layernorm_forward_bf16(bf16_t* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                            int64_t N, int64_t C, double eps, cudaStream_t s) {
  // inp is only read: x == nullptr skips the add, so the const_cast never writes.
  if (N > 0) k_ln_fwd_bf16<<<unsigned(N), kThreads, 0, s>>>(const_cast<float*>(inp), out, mean, rstd, nullptr, w, b, C, eps);
}
void add_layernorm_forward_bf16(float* xm, bf16_t* out, float* mean, float* rstd, const float* x, const float* w,
                                const float* b, int64_t N, int64_t C, double eps, cudaStream_t s) {
  if (N > 0) k_ln_fwd_bf16<<<unsigned(N), kThreads, 0, s>>>(xm, out, mean, rstd, x, w, b, C, eps);
}
void act_forward_bf16(bf16_t* out, const float* inp, int64_t n, int act, cudaStream_t s) {
  if (n > 0) k_act_fwd_bf16<<<blocks_for(n), kThreads, 0, s>>>(out, inp, n, act);
}
void column_pass_bf16(int kind, bf16_t* d16, bf16_t* act16, float* dbias, double* partial, const float* dout,
                      const float* inp, int64_t M, int64_t N, int act, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  const int chunks = column_chunks(M);
  const dim3 grid(unsigned((N + kThreads - 1) / kThreads), unsigned(chunks));
  k_column_pass<<<grid, kThreads, 0, s>>>(kind, d16, act16, dbias ? partial : nullptr, dout, inp, M, N, act);
  if (dbias) add_column_partials(dbias, partial, chunks, N, s);
}

}  // namespace oc::ops::cuda
