// Launchers of the CUDA kernels of the convolution towers (ModifiedResNet, ops/conv.h,
// ops/batchnorm.h, ops/pool.h): im2col / col2im around the cuBLASLt GEMMs of conv_ops.cpp, the
// direct fix-ups that keep non-finite values where the reference has them, BatchNorm's column
// statistics, ReLU, average pooling and AttentionPool2d's token matrix. Device pointers, sizes,
// the backend's stream; launch errors are checked by the caller (cudaGetLastError()). Plain C++.
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace oc::ops::cuda {

// The geometry of ops::ConvShape, with the output size, as the kernels take it.
struct ConvGeom {
  int64_t N, H, W, C, OC, K, stride, pad, OH, OW;
  int64_t kk() const { return C * K * K; }  // columns of the im2col matrix: (c, i, j), OIHW's order
};

// ---- convolution (kernels_conv.cu) ----
// col[r, (c*K + i)*K + j] for the rows r of images [0, n) (the caller offsets inp to its first
// image): inp[n, oh*stride - pad + i, ow*stride - pad + j, c], 0 outside the image; rounded to
// bf16 values when round_bf16.
void im2col(float* col, const float* inp, int64_t n, const ConvGeom& g, bool round_bf16, cudaStream_t s);
// dinp[n images] = the sum over every (output position, tap) that reads an input element of
// its dcol entry (assigned; 0 where no window reaches). Taps in a fixed order.
void col2im(float* dinp, const float* dcol, int64_t n, const ConvGeom& g, cudaStream_t s);
// Forward outputs whose window crosses the padding, recomputed from the in-image taps alone when
// *flag != 0 (the weights hold a NaN/Inf: the GEMM's 0 * Inf of a padded tap would make a NaN
// the reference does not have). w: the weights as the GEMM used them; inp rounded when round_bf16.
void conv_forward_fixup(float* out, const float* inp, const float* w, const int* flag, const ConvGeom& g,
                        bool round_bf16, cudaStream_t s);
// dweight[e] += flag && *flag ? the direct sum over the in-image taps (dout holds a NaN/Inf)
// : dw_gemm[e]. dout: as the GEMM used it; inp rounded when round_bf16. flag may be null.
void conv_dweight_finish(float* dweight, const float* dw_gemm, const float* dout, const float* inp, const int* flag,
                         const ConvGeom& g, bool round_bf16, cudaStream_t s);

// ---- depthwise convolution, convolution bias (kernels_dwconv.cu) ----
// dst[N,DH,DW,C] = init[c] (null: 0) + sum over taps (i, j) inside src of
// src[n, y - off + i, x - off + j, c] * w[c, tap], w [C,1,K,K], tap = i*K + j, or with `flip`
// (K-1-i)*K + (K-1-j): the forward (off = pad) and the backward data (off = K-1-pad, flipped).
void dwconv_correlate(float* dst, int64_t DH, int64_t DW, const float* src, int64_t SH, int64_t SW, const float* w,
                      const float* init, int64_t N, int64_t C, int64_t K, int64_t off, bool flip, cudaStream_t s);
// dweight[C,1,K,K] += the depthwise weight gradient; partial: kColChunks * C*K*K doubles.
void dwconv_dweight(float* dweight, double* partial, const float* dout, const float* inp, int64_t N, int64_t H,
                    int64_t W, int64_t C, int64_t K, int64_t pad, cudaStream_t s);
// out[r, c] += bias[c] for rows r < rows.
void add_bias_rows(float* out, const float* bias, int64_t rows, int64_t C, cudaStream_t s);

// ---- BatchNorm, ReLU, pooling (kernels_convnet.cu) ----
// BatchNorm forward. part: kColChunks * C doubles of scratch, stat: C doubles, coef:
// C floats (the per-column scale). training: batch statistics and the running update; else the
// running statistics. mean, rstd: saved for backward.
void batchnorm_forward(float* out, float* mean, float* rstd, float* running_mean, float* running_var, const float* inp,
                       const float* weight, const float* bias, int64_t R, int64_t C, double eps, double momentum,
                       bool training, double* part, double* stat, float* coef, cudaStream_t s);
// BatchNorm backward (ops/batchnorm.h). part: 2 * kColChunks * C doubles, coef: 3 * C floats.
void batchnorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int64_t R, int64_t C, bool training,
                        double* part, float* coef, cudaStream_t s);
void relu_forward(float* out, const float* inp, int64_t n, cudaStream_t s);
void relu_backward(float* dinp, const float* dout, const float* out, int64_t n, cudaStream_t s);
void avg_pool_forward(float* out, const float* inp, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k,
                      cudaStream_t s);
void avg_pool_backward(float* dinp, const float* dout, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k,
                       cudaStream_t s);
void attnpool_tokens_forward(float* x, const float* feat, const float* pos, int64_t N, int64_t HW, int64_t C,
                             cudaStream_t s);
void attnpool_tokens_backward(float* dfeat, float* dpos, const float* dx, int64_t N, int64_t HW, int64_t C,
                              cudaStream_t s);

}  // namespace oc::ops::cuda
