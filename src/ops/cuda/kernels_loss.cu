// The row passes of CLIP's contrastive loss and of SigLIP's sigmoid loss, on logits that
// cuBLASLt computed (the GEMMs and the gradient GEMMs are in cuda_fused_ops.cpp). One block
// per row; exp/log sums in double as ops/cpu/loss.cpp; per-row partial results summed by one
// block in row order, so the loss and d/dlogit_scale are bitwise reproducible.
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include <cmath>

#include "ops/cuda/kernels_fused.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

// The max of v over the block (NaN once any thread holds NaN); every thread gets it.
__device__ inline float block_max_nan(float v) {
  __shared__ float sh[kThreads];
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      const float a = sh[threadIdx.x], b = sh[threadIdx.x + w];
      sh[threadIdx.x] = (isnan(a) || isnan(b)) ? NAN : fmaxf(a, b);
    }
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

// Row r of L: z = scale * L (fp32, as the cpu kernel), lse in double, then L = dloss/dL.
__global__ void k_clip_ce_rows(float* L, double* parts, int64_t Nl, int64_t Na, int64_t offset, float scale) {
  const int64_t r = blockIdx.x;
  float* row = L + r * Na;
  const int64_t label = r + offset;
  const double w = 1.0 / double(2 * Nl);
  float mx = -INFINITY;
  for (int64_t j = threadIdx.x; j < Na; j += blockDim.x) {
    const float z = row[j] * scale;
    row[j] = z;
    mx = (isnan(mx) || isnan(z)) ? NAN : fmaxf(mx, z);
  }
  mx = block_max_nan(mx);  // its barriers also make every z visible
  const double z_label = row[label];
  double sum = 0;
  for (int64_t j = threadIdx.x; j < Na; j += blockDim.x) sum += exp(double(row[j] - mx));
  const double lse = double(mx) + log(block_sum(sum));  // block_sum's barriers: z_label is read before L changes
  double ds = 0;
  for (int64_t j = threadIdx.x; j < Na; j += blockDim.x) {
    const double z = row[j];
    const double g = (exp(z - lse) - (j == label ? 1.0 : 0.0)) * w;
    ds += g * z;
    row[j] = float(g * double(scale));
  }
  ds = block_sum(ds);
  if (threadIdx.x == 0) {
    parts[r] = (lse - z_label) * w;
    parts[Nl + r] = ds;
  }
}

// log(sigmoid(x)) and sigmoid(x), stable for any x (ops/cpu/siglip_loss.cpp).
__device__ inline double log_sigmoid(double x) { return x >= 0 ? -log1p(exp(-x)) : x - log1p(exp(x)); }
__device__ inline double sigmoid(double x) { return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x)); }

__global__ void k_siglip_rows(float* G, double* parts, int64_t B, int64_t M, float scale, float bias, bool positives) {
  const int64_t i = blockIdx.x;
  double loss = 0, d_scale = 0, d_bias = 0;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    float& v = G[i * M + j];
    const double dot = v;
    const double label = positives && i == j ? 1.0 : -1.0;
    const double z = label * (double(scale) * dot + double(bias));
    loss -= log_sigmoid(z);
    const double dl = -label * sigmoid(-z) / double(B);  // d(-logsigmoid(z))/d logit, over B
    d_scale += dl * dot;
    d_bias += dl;
    v = float(dl * double(scale));  // d loss / d dots
  }
  loss = block_sum(loss);
  d_scale = block_sum(d_scale);
  d_bias = block_sum(d_bias);
  if (threadIdx.x == 0) parts[i] = loss, parts[B + i] = d_scale, parts[2 * B + i] = d_bias;
}

__global__ void k_sum_parts(double* out, const double* parts, int64_t n, int nsums) {
  for (int k = 0; k < nsums; ++k) {
    double s = 0;
    for (int64_t r = threadIdx.x; r < n; r += blockDim.x) s += parts[k * n + r];
    s = block_sum(s);
    if (threadIdx.x == 0) out[k] = s;
  }
}

}  // namespace

void clip_ce_rows(float* L, double* parts, int64_t Nl, int64_t Na, int64_t offset, float scale, cudaStream_t s) {
  if (Nl > 0) k_clip_ce_rows<<<unsigned(Nl), kThreads, 0, s>>>(L, parts, Nl, Na, offset, scale);
}
void siglip_rows(float* G, double* parts, int64_t B, int64_t M, float scale, float bias, bool positives,
                 cudaStream_t s) {
  if (B > 0) k_siglip_rows<<<unsigned(B), kThreads, 0, s>>>(G, parts, B, M, scale, bias, positives);
}
void sum_parts(double* out, const double* parts, int64_t n, int nsums, cudaStream_t s) {
  k_sum_parts<<<1, kThreads, 0, s>>>(out, parts, n, nsums);
}

}  // namespace oc::ops::cuda
