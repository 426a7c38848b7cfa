// EVA02's rotary embedding and SwiGLU gate on the GPU: grid-stride loops, one thread per
// rotated pair / element, the float operations of ops/cpu/eva.cpp.
#include "ops/cuda/kernels_eva.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

// Pair p of n = B * (T - prefix) * 2H * D/2: (row, head of q|k, pair in the head).
__global__ void k_rope(float* qkv, const float* sincos, int64_t B, int64_t T, int64_t W, int64_t H, int64_t prefix,
                       float sign) {
  const int64_t D = W / H, half = D / 2, Tp = T - prefix;
  GRID_STRIDE(p, B * Tp * 2 * H * half) {
    const int64_t i = 2 * (p % half), hh = (p / half) % (2 * H), r = p / (half * 2 * H);
    const int64_t b = r / Tp, t = prefix + r % Tp;
    const float s = sign * sincos[(t - prefix) * 2 * D + i], c = sincos[(t - prefix) * 2 * D + D + i];
    float* x = qkv + (b * T + t) * 3 * W + hh * D + i;
    const float x0 = x[0], x1 = x[1];
    x[0] = x0 * c - x1 * s;
    x[1] = x1 * c + x0 * s;
  }
}

__device__ inline float sigmoid_f(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void k_swiglu(float* out, const float* gate, const float* x, int64_t n) {
  GRID_STRIDE(i, n) {
    const float g = gate[i];
    out[i] = g * sigmoid_f(g) * x[i];
  }
}

__global__ void k_swiglu_bwd(float* dgate, float* dx, const float* dout, const float* gate, const float* x, int64_t n) {
  GRID_STRIDE(i, n) {
    const float g = gate[i], d = dout[i], s = sigmoid_f(g), xi = x[i];
    dx[i] = d * g * s;
    dgate[i] = d * xi * s * (1.0f + g * (1.0f - s));
  }
}

}  // namespace

void rope_rotate(float* qkv, const float* sincos, int64_t B, int64_t T, int64_t W, int64_t H, int64_t prefix,
                 bool inverse, cudaStream_t s) {
  const int64_t n = B * (T - prefix) * W;  // pairs: (T - prefix) rows of 2W values
  if (n > 0) k_rope<<<blocks_for(n), kThreads, 0, s>>>(qkv, sincos, B, T, W, H, prefix, inverse ? -1.0f : 1.0f);
}
void swiglu_forward(float* out, const float* gate, const float* x, int64_t n, cudaStream_t s) {
  if (n > 0) k_swiglu<<<blocks_for(n), kThreads, 0, s>>>(out, gate, x, n);
}
void swiglu_backward(float* dgate, float* dx, const float* dout, const float* gate, const float* x, int64_t n,
                     cudaStream_t s) {
  if (n > 0) k_swiglu_bwd<<<blocks_for(n), kThreads, 0, s>>>(dgate, dx, dout, gate, x, n);
}

}  // namespace oc::ops::cuda
