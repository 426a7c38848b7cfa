// BatchNorm2d, ReLU, average pooling and AttentionPool2d's token matrix on channels-last
// activations (ops/batchnorm.h, ops/pool.h), the arithmetic of ops/cpu/batchnorm.cpp and
// ops/cpu/pool.cpp. BatchNorm's column statistics in double over a grid of (column block, row
// chunk) partial sums, the chunks then added in order per column (kernels.h, column_chunks);
// every other output is one thread's sum in a fixed order: deterministic, no atomics.
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include <cmath>

#include "ops/cuda/kernels.h"
#include "ops/cuda/kernels_conv.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

// ---- BatchNorm ----
// Partial column sums of x (mu null) or of (x - mu)^2, chunk blockIdx.y of the rows.
__global__ void k_bn_part(double* part, const float* x, const double* mu, int64_t R, int64_t C) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  int64_t r0, r1;
  chunk_rows(R, &r0, &r1);
  double s = 0;
  if (mu) {
    const double m = mu[c];
    for (int64_t r = r0; r < r1; ++r) {
      const double d = double(x[r * C + c]) - m;
      s += d * d;
    }
  } else {
    for (int64_t r = r0; r < r1; ++r) s += double(x[r * C + c]);
  }
  part[blockIdx.y * C + c] = s;
}
__device__ inline double chunk_sum(const double* part, int chunks, int64_t C, int64_t c) {
  double s = 0;
  for (int k = 0; k < chunks; ++k) s += part[k * C + c];
  return s;
}
__global__ void k_bn_mean(double* m, const double* part, int chunks, int64_t R, int64_t C) {
  GRID_STRIDE(c, C) m[c] = chunk_sum(part, chunks, C, c) / double(R);
}
// The saved statistics and the per-column scale; training: from the batch (m, the squared
// deviations' partial sums), with the running update; eval: from the running statistics.
__global__ void k_bn_stats(float* mean, float* rstd, float* scale, float* running_mean, float* running_var,
                           const double* m, const double* part_sq, int chunks, const float* weight, int64_t R,
                           int64_t C, double eps, double momentum, bool training) {
  GRID_STRIDE(c, C) {
    double mu, var;
    if (training) {
      mu = m[c], var = chunk_sum(part_sq, chunks, C, c) / double(R);
      running_mean[c] = float((1 - momentum) * double(running_mean[c]) + momentum * mu);
      running_var[c] = float((1 - momentum) * double(running_var[c]) + momentum * var * double(R) / double(R - 1));
    } else {
      mu = double(running_mean[c]), var = double(running_var[c]);
    }
    const double rs = 1.0 / sqrt(var + eps);
    mean[c] = float(mu), rstd[c] = float(rs);
    scale[c] = float(rs * double(weight[c]));
  }
}
__global__ void k_bn_apply(float* out, const float* inp, const float* mean, const float* scale, const float* bias,
                           int64_t R, int64_t C) {
  GRID_STRIDE(e, R * C) {
    const int64_t c = e % C;
    out[e] = (inp[e] - mean[c]) * scale[c] + bias[c];
  }
}
// Partial column sums of dout and of dout * xhat.
__global__ void k_bn_bwd_part(double* psd, double* psdx, const float* dout, const float* inp, const float* mean,
                              const float* rstd, int64_t R, int64_t C) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  int64_t r0, r1;
  chunk_rows(R, &r0, &r1);
  const double mu = mean[c], rs = rstd[c];
  double sd = 0, sdx = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const double g = dout[r * C + c];
    sd += g;
    sdx += g * (double(inp[r * C + c]) - mu) * rs;
  }
  psd[blockIdx.y * C + c] = sd;
  psdx[blockIdx.y * C + c] = sdx;
}
// dweight, dbias += the sums; coef = {k, a, kb}[C] of ops/cpu/batchnorm.cpp's dinp formula.
__global__ void k_bn_bwd_coef(float* dweight, float* dbias, float* coef, const double* psd, const double* psdx,
                              int chunks, const float* weight, const float* rstd, int64_t R, int64_t C, bool training) {
  GRID_STRIDE(c, C) {
    const double sd = chunk_sum(psd, chunks, C, c), sdx = chunk_sum(psdx, chunks, C, c);
    if (dweight) dweight[c] += float(sdx);
    if (dbias) dbias[c] += float(sd);
    const double kc = double(weight[c]) * double(rstd[c]);
    const double b = training ? sdx / double(R) : 0.0;
    coef[c] = float(kc);
    coef[C + c] = float(training ? sd / double(R) : 0.0);
    coef[2 * C + c] = float(kc * b * double(rstd[c]));
  }
}
// eval: inp does not enter (a NaN in it stays out of dinp, as in the definition).
__global__ void k_bn_bwd_apply(float* dinp, const float* dout, const float* inp, const float* mean, const float* coef,
                               int64_t R, int64_t C, bool training) {
  GRID_STRIDE(e, R * C) {
    const int64_t c = e % C;
    dinp[e] = training ? coef[c] * (dout[e] - coef[C + c]) - coef[2 * C + c] * (inp[e] - mean[c]) : coef[c] * dout[e];
  }
}

// ---- ReLU (NaN < 0 is false: NaN kept) ----
__global__ void k_relu(float* out, const float* inp, int64_t n) {
  GRID_STRIDE(i, n) out[i] = inp[i] < 0.0f ? 0.0f : inp[i];
}
__global__ void k_relu_bwd(float* dinp, const float* dout, const float* out, int64_t n) {
  GRID_STRIDE(i, n) dinp[i] = out[i] <= 0.0f ? 0.0f : dout[i];
}

// ---- pooling ----
__global__ void k_avg_pool(float* out, const float* inp, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k) {
  const int64_t OH = H / k, OW = W / k;
  const float inv = 1.0f / float(k * k);
  GRID_STRIDE(e, N * OH * OW * C) {
    const int64_t c = e % C, ow = (e / C) % OW, oh = (e / (C * OW)) % OH, n = e / (C * OW * OH);
    float o = 0.0f;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) o += inp[((n * H + oh * k + i) * W + ow * k + j) * C + c];
    out[e] = o * inv;
  }
}
__global__ void k_avg_pool_bwd(float* dinp, const float* dout, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k) {
  const int64_t OH = H / k, OW = W / k;
  const float inv = 1.0f / float(k * k);
  GRID_STRIDE(e, N * H * W * C) {
    const int64_t c = e % C, w = (e / C) % W, h = (e / (C * W)) % H, n = e / (C * W * H);
    const int64_t oh = h / k, ow = w / k;
    dinp[e] = oh < OH && ow < OW ? dout[((n * OH + oh) * OW + ow) * C + c] * inv : 0.0f;
  }
}
// x[n, 1+t] = feat[n, t] + pos[1+t]; x[n, 0] = (sum_t feat[n, t]) * (1/HW) + pos[0], t in order.
__global__ void k_ap_tokens(float* x, const float* feat, const float* pos, int64_t N, int64_t HW, int64_t C) {
  GRID_STRIDE(e, N * HW * C) {
    const int64_t c = e % C, t = (e / C) % HW, n = e / (C * HW);
    x[(n * (HW + 1) + 1 + t) * C + c] = feat[e] + pos[(1 + t) * C + c];
  }
}
__global__ void k_ap_mean(float* x, const float* feat, const float* pos, int64_t N, int64_t HW, int64_t C) {
  const float inv = 1.0f / float(HW);
  GRID_STRIDE(e, N * C) {
    const int64_t n = e / C, c = e % C;
    float s = 0.0f;
    for (int64_t t = 0; t < HW; ++t) s += feat[(n * HW + t) * C + c];
    x[n * (HW + 1) * C + c] = s * inv + pos[c];
  }
}
__global__ void k_ap_dfeat(float* dfeat, const float* dx, int64_t N, int64_t HW, int64_t C) {
  const float inv = 1.0f / float(HW);
  GRID_STRIDE(e, N * HW * C) {
    const int64_t c = e % C, t = (e / C) % HW, n = e / (C * HW);
    dfeat[e] = dx[(n * (HW + 1) + 1 + t) * C + c] + dx[n * (HW + 1) * C + c] * inv;
  }
}
// dpos[j, c] += dx[n, j, c] for n in order (the cpu kernel's float additions).
__global__ void k_ap_dpos(float* dpos, const float* dx, int64_t N, int64_t HW, int64_t C) {
  GRID_STRIDE(e, (HW + 1) * C) {
    float acc = dpos[e];
    for (int64_t n = 0; n < N; ++n) acc += dx[n * (HW + 1) * C + e];
    dpos[e] = acc;
  }
}

dim3 column_grid(int64_t C, int chunks) { return dim3(unsigned((C + kThreads - 1) / kThreads), unsigned(chunks)); }

}  // namespace

void batchnorm_forward(float* out, float* mean, float* rstd, float* running_mean, float* running_var, const float* inp,
                       const float* weight, const float* bias, int64_t R, int64_t C, double eps, double momentum,
                       bool training, double* part, double* stat, float* coef, cudaStream_t s) {
  if (R <= 0 || C <= 0) return;
  const int chunks = column_chunks(R);
  if (training) {
    k_bn_part<<<column_grid(C, chunks), kThreads, 0, s>>>(part, inp, nullptr, R, C);
    k_bn_mean<<<blocks_for(C), kThreads, 0, s>>>(stat, part, chunks, R, C);
    k_bn_part<<<column_grid(C, chunks), kThreads, 0, s>>>(part, inp, stat, R, C);
  }
  k_bn_stats<<<blocks_for(C), kThreads, 0, s>>>(mean, rstd, coef, running_mean, running_var, stat, part, chunks, weight,
                                                R, C, eps, momentum, training);
  k_bn_apply<<<blocks_for(R * C), kThreads, 0, s>>>(out, inp, mean, coef, bias, R, C);
}
void batchnorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int64_t R, int64_t C, bool training,
                        double* part, float* coef, cudaStream_t s) {
  if (R <= 0 || C <= 0) return;
  const int chunks = column_chunks(R);
  double* psdx = part + int64_t(chunks) * C;
  k_bn_bwd_part<<<column_grid(C, chunks), kThreads, 0, s>>>(part, psdx, dout, inp, mean, rstd, R, C);
  k_bn_bwd_coef<<<blocks_for(C), kThreads, 0, s>>>(dweight, dbias, coef, part, psdx, chunks, weight, rstd, R, C,
                                                   training);
  if (dinp) k_bn_bwd_apply<<<blocks_for(R * C), kThreads, 0, s>>>(dinp, dout, inp, mean, coef, R, C, training);
}
void relu_forward(float* out, const float* inp, int64_t n, cudaStream_t s) {
  if (n > 0) k_relu<<<blocks_for(n), kThreads, 0, s>>>(out, inp, n);
}
void relu_backward(float* dinp, const float* dout, const float* out, int64_t n, cudaStream_t s) {
  if (n > 0) k_relu_bwd<<<blocks_for(n), kThreads, 0, s>>>(dinp, dout, out, n);
}
void avg_pool_forward(float* out, const float* inp, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k,
                      cudaStream_t s) {
  const int64_t n = N * (H / k) * (W / k) * C;
  if (n > 0) k_avg_pool<<<blocks_for(n), kThreads, 0, s>>>(out, inp, N, H, W, C, k);
}
void avg_pool_backward(float* dinp, const float* dout, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k,
                       cudaStream_t s) {
  const int64_t n = N * H * W * C;
  if (n > 0) k_avg_pool_bwd<<<blocks_for(n), kThreads, 0, s>>>(dinp, dout, N, H, W, C, k);
}
void attnpool_tokens_forward(float* x, const float* feat, const float* pos, int64_t N, int64_t HW, int64_t C,
                             cudaStream_t s) {
  if (N * HW * C <= 0) return;
  k_ap_tokens<<<blocks_for(N * HW * C), kThreads, 0, s>>>(x, feat, pos, N, HW, C);
  k_ap_mean<<<blocks_for(N * C), kThreads, 0, s>>>(x, feat, pos, N, HW, C);
}
void attnpool_tokens_backward(float* dfeat, float* dpos, const float* dx, int64_t N, int64_t HW, int64_t C,
                              cudaStream_t s) {
  if (HW * C <= 0) return;
  if (N > 0) k_ap_dfeat<<<blocks_for(N * HW * C), kThreads, 0, s>>>(dfeat, dx, N, HW, C);
  if (dpos) k_ap_dpos<<<blocks_for((HW + 1) * C), kThreads, 0, s>>>(dpos, dx, N, HW, C);
}

}  // namespace oc::ops::cuda
