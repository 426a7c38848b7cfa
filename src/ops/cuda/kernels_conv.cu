// The convolution's data movement around its GEMMs (conv_ops.cpp): im2col in OIHW's column
// order (c, i, j), so the GEMMs take the [OC, C*K*K] weight as it is stored; col2im as a gather
// (one thread per input element walks the taps that read it in a fixed order: deterministic, no
// atomics); and the direct fix-ups for non-finite operands (kernels_conv.h says when). Index
// arithmetic in int64. First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/kernels_conv.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

__device__ inline bool inside(const ConvGeom& g, int64_t h, int64_t w) {
  return h >= 0 && h < g.H && w >= 0 && w < g.W;
}
__device__ inline float in_at(const ConvGeom& g, const float* inp, int64_t n, int64_t h, int64_t w, int64_t c,
                              bool round_bf16) {
  const float v = inp[((n * g.H + h) * g.W + w) * g.C + c];
  return round_bf16 ? rnd(v) : v;
}

__global__ void k_im2col(float* col, const float* inp, int64_t n, ConvGeom g, bool round_bf16) {
  const int64_t KK = g.K * g.K, kk = g.C * KK;
  GRID_STRIDE(e, n * g.OH * g.OW * kk) {
    const int64_t r = e / kk, q = e % kk;
    const int64_t c = q / KK, i = (q / g.K) % g.K, j = q % g.K;
    const int64_t ow = r % g.OW, oh = (r / g.OW) % g.OH, img = r / (g.OH * g.OW);
    const int64_t h = oh * g.stride - g.pad + i, w = ow * g.stride - g.pad + j;
    col[e] = inside(g, h, w) ? in_at(g, inp, img, h, w, c, round_bf16) : 0.0f;
  }
}

__global__ void k_col2im(float* dinp, const float* dcol, int64_t n, ConvGeom g) {
  const int64_t kk = g.C * g.K * g.K;
  GRID_STRIDE(e, n * g.H * g.W * g.C) {
    const int64_t c = e % g.C, w = (e / g.C) % g.W, h = (e / (g.C * g.W)) % g.H, img = e / (g.C * g.W * g.H);
    float acc = 0.0f;
    for (int64_t i = 0; i < g.K; ++i) {
      const int64_t hh = h + g.pad - i;  // = oh * stride for the output row whose tap i reads row h
      if (hh < 0 || hh % g.stride != 0 || hh / g.stride >= g.OH) continue;
      for (int64_t j = 0; j < g.K; ++j) {
        const int64_t ww = w + g.pad - j;
        if (ww < 0 || ww % g.stride != 0 || ww / g.stride >= g.OW) continue;
        acc += dcol[((img * g.OH + hh / g.stride) * g.OW + ww / g.stride) * kk + (c * g.K + i) * g.K + j];
      }
    }
    dinp[e] = acc;
  }
}

__global__ void k_conv_fwd_fixup(float* out, const float* inp, const float* wt, const int* flag, ConvGeom g,
                                 bool round_bf16) {
  if (*flag == 0) return;
  GRID_STRIDE(e, g.N * g.OH * g.OW * g.OC) {
    const int64_t o = e % g.OC, ow = (e / g.OC) % g.OW, oh = (e / (g.OC * g.OW)) % g.OH, n = e / (g.OC * g.OW * g.OH);
    const int64_t h0 = oh * g.stride - g.pad, w0 = ow * g.stride - g.pad;
    if (h0 >= 0 && h0 + g.K <= g.H && w0 >= 0 && w0 + g.K <= g.W) continue;  // no padded tap: the GEMM's value stands
    float acc = 0.0f;
    for (int64_t i = 0; i < g.K; ++i)
      for (int64_t j = 0; j < g.K; ++j) {
        if (!inside(g, h0 + i, w0 + j)) continue;
        for (int64_t c = 0; c < g.C; ++c)
          acc += in_at(g, inp, n, h0 + i, w0 + j, c, round_bf16) * wt[((o * g.C + c) * g.K + i) * g.K + j];
      }
    out[e] = acc;
  }
}

__global__ void k_conv_dw_finish(float* dweight, const float* dw, const float* dout, const float* inp, const int* flag,
                                 ConvGeom g, bool round_bf16) {
  const bool direct = flag != nullptr && *flag != 0;
  GRID_STRIDE(e, g.OC * g.C * g.K * g.K) {
    if (!direct) {
      dweight[e] += dw[e];
      continue;
    }
    const int64_t j = e % g.K, i = (e / g.K) % g.K, c = (e / (g.K * g.K)) % g.C, o = e / (g.K * g.K * g.C);
    float acc = 0.0f;
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow) {
          const int64_t h = oh * g.stride - g.pad + i, w = ow * g.stride - g.pad + j;
          if (inside(g, h, w))
            acc += dout[((n * g.OH + oh) * g.OW + ow) * g.OC + o] * in_at(g, inp, n, h, w, c, round_bf16);
        }
    dweight[e] += acc;
  }
}

// The fix-ups usually find their flag 0 and return: a small grid that loops when it does not.
int fixup_blocks(int64_t n) { return blocks_for(n) < 1024 ? blocks_for(n) : 1024; }

}  // namespace

void im2col(float* col, const float* inp, int64_t n, const ConvGeom& g, bool round_bf16, cudaStream_t s) {
  const int64_t total = n * g.OH * g.OW * g.kk();
  if (total > 0) k_im2col<<<blocks_for(total), kThreads, 0, s>>>(col, inp, n, g, round_bf16);
}
void col2im(float* dinp, const float* dcol, int64_t n, const ConvGeom& g, cudaStream_t s) {
  const int64_t total = n * g.H * g.W * g.C;
  if (total > 0) k_col2im<<<blocks_for(total), kThreads, 0, s>>>(dinp, dcol, n, g);
}
void conv_forward_fixup(float* out, const float* inp, const float* w, const int* flag, const ConvGeom& g,
                        bool round_bf16, cudaStream_t s) {
  const int64_t total = g.N * g.OH * g.OW * g.OC;
  if (total > 0) k_conv_fwd_fixup<<<fixup_blocks(total), kThreads, 0, s>>>(out, inp, w, flag, g, round_bf16);
}
void conv_dweight_finish(float* dweight, const float* dw_gemm, const float* dout, const float* inp, const int* flag,
                         const ConvGeom& g, bool round_bf16, cudaStream_t s) {
  const int64_t total = g.OC * g.kk();
  if (total > 0)
    k_conv_dw_finish<<<blocks_for(total), kThreads, 0, s>>>(dweight, dw_gemm, dout, inp, flag, g, round_bf16);
}

}  // namespace oc::ops::cuda
