// Convolution and BatchNorm on the CUDA backend (conv_ops.h).
//
// Why im2col + cuBLASLt and not cuDNN: the GEMMs are the backend's existing, plan-cached
// cuBLASLt path (fp32 without TF32 unless allowed, deterministic), so the convolutions need no
// new library, no per-shape algorithm search and no check that a deterministic cuDNN algorithm
// exists for NHWC fp32 in each direction; what is new is plain index arithmetic (im2col, col2im)
// that can be reviewed line by line. The cost is the im2col matrix (K*K times the activations,
// built in chunks of images under kColBudget) and its memory traffic; the 1x1 stride-1
// convolutions (most of a ModifiedResNet's) skip it and are one GEMM on the activations as
// they are. The im2col columns are in OIHW's (c, i, j) order, so the GEMMs read the
// [OC, C*K*K] weight as stored:
//   forward:          out[rows, OC]   = col[rows, CKK] @ W^T
//   backward data:    dcol[rows, CKK] = dout[rows, OC] @ W, then col2im (a gather, assigned)
//   backward weights: dW[OC, CKK]    += dout^T @ col (chunks summed in order in scratch)
// A padded tap is a 0 in col, and 0 * Inf = NaN where the reference skips the tap: when the
// weights (forward) or dout (backward weights) hold a NaN/Inf, a device flag makes the fix-up
// kernels recompute the affected outputs from the in-image taps alone (kernels_conv.h); with
// finite operands they return at once. Backward data needs none (col2im reads in-image taps only).
// Prec::BF16 (amp_bf16): operands rounded to bf16 values (im2col rounds as it copies), fp32
// GEMMs: products of bf16 values are exact in fp32, as the cpu backend.
#include "ops/cuda/conv_ops.h"

#include <algorithm>

#include "core/check.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kernels.h"
#include "ops/cuda/kernels_conv.h"

namespace oc::ops::cuda {
namespace {

#define OC_LAUNCHED() OC_CUDA_CHECK(cudaGetLastError())

constexpr int64_t kColBudget = int64_t(64) << 20;  // floats of im2col scratch (256 MiB), at least one image

void check_shape(const ConvShape& s, const char* op) {
  OC_CHECK(s.N > 0 && s.H > 0 && s.W > 0 && s.C > 0 && s.OC > 0 && s.K > 0 && s.stride > 0 && s.pad >= 0,
           "{}: bad shape N={} H={} W={} C={} OC={} K={} stride={} pad={}", op, s.N, s.H, s.W, s.C, s.OC, s.K, s.stride,
           s.pad);
  OC_CHECK(s.OH() > 0 && s.OW() > 0, "{}: kernel {} (pad {}) larger than the input {}x{}", op, s.K, s.pad, s.H, s.W);
}

ConvGeom geom(const ConvShape& s) { return {s.N, s.H, s.W, s.C, s.OC, s.K, s.stride, s.pad, s.OH(), s.OW()}; }
bool pointwise(const ConvShape& s) { return s.K == 1 && s.stride == 1 && s.pad == 0; }  // col == inp

// Row-major C[M,N] = op(A) op(B) + beta * C on cuBLASLt (fp32 compute).
void gemm(DeviceCtx& c, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
          int64_t ldb, float beta, float* C, int64_t ldc) {
  c.lt.run(LtGemm{ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, false, 1.0f, beta}, c.s);
}

// x itself (F32), or a copy of its n elements rounded to bf16 values in `slot` (BF16).
const float* operand(DeviceCtx& c, Slot slot, const float* x, int64_t n, Prec prec) {
  if (prec != Prec::BF16) return x;
  float* r = c.scratch.get<float>(slot, n);
  round_bf16_f32(r, x, n, c.s);
  OC_LAUNCHED();
  return r;
}

// Images per im2col chunk.
int64_t chunk_images(const ConvShape& s) {
  return std::clamp(kColBudget / (s.OH() * s.OW() * s.C * s.K * s.K), int64_t(1), s.N);
}

// A device int: 1 when any of x[0, n) is NaN or Inf, else 0.
const int* nonfinite_flag(DeviceCtx& c, const float* x, int64_t n) {
  int* f = c.scratch.get<int>(Slot::ConvFlag, 1);
  OC_CUDA_CHECK(cudaMemsetAsync(f, 0, sizeof(int), c.s));
  count_nonfinite(f, x, n, c.s);
  OC_LAUNCHED();
  return f;
}

}  // namespace

// The convolutions without their bias (the bias after them, in conv2d_forward / _backward_weights).
static void conv2d_forward_nobias(DeviceCtx& c, const Conv2dForwardArgs& a);
static void conv2d_backward_weights_nobias(DeviceCtx& c, const Conv2dBackwardWeightsArgs& a);

// The epilogue (bias, residual, ReLU) as passes after the convolution; a residual that is `out`
// itself has the convolution write scratch first.
void conv2d_forward(DeviceCtx& c, const Conv2dForwardArgs& a) {
  const int64_t rows = a.shape.N * a.shape.OH() * a.shape.OW(), n = rows * a.shape.OC;
  Conv2dForwardArgs b = a;
  if (a.residual == a.out) b.out = c.scratch.get<float>(Slot::ConvEpilogue, n);
  conv2d_forward_nobias(c, b);
  if (a.bias) add_bias_rows(b.out, a.bias, rows, a.shape.OC, c.s);
  if (a.residual) add_inplace(a.out, a.residual == a.out ? b.out : a.residual, n, c.s);
  if (a.relu) relu_forward(a.out, a.out, n, c.s);
  OC_LAUNCHED();
}

static void conv2d_forward_nobias(DeviceCtx& c, const Conv2dForwardArgs& a) {
  const ConvShape& s = a.shape;
  check_shape(s, "conv2d_forward");
  const float* w = operand(c, Slot::ConvWeight, a.weight, s.weight_size(), a.prec);
  const int64_t rows = s.OH() * s.OW(), kk = s.C * s.K * s.K;
  if (pointwise(s)) {
    const float* x = operand(c, Slot::ConvAct, a.inp, s.in_size(), a.prec);
    return gemm(c, false, true, s.N * rows, s.OC, s.C, x, s.C, w, s.C, 0.0f, a.out, s.OC);
  }
  const ConvGeom g = geom(s);
  const int64_t nb = chunk_images(s);
  float* col = c.scratch.get<float>(Slot::ConvCol, nb * rows * kk);
  for (int64_t n0 = 0; n0 < s.N; n0 += nb) {
    const int64_t n = std::min(nb, s.N - n0);
    im2col(col, a.inp + n0 * s.H * s.W * s.C, n, g, a.prec == Prec::BF16, c.s);
    OC_LAUNCHED();
    gemm(c, false, true, n * rows, s.OC, kk, col, kk, w, kk, 0.0f, a.out + n0 * rows * s.OC, s.OC);
  }
  if (s.pad > 0) {
    conv_forward_fixup(a.out, a.inp, w, nonfinite_flag(c, w, s.weight_size()), g, a.prec == Prec::BF16, c.s);
    OC_LAUNCHED();
  }
}

void conv2d_backward_data(DeviceCtx& c, const Conv2dBackwardDataArgs& a) {
  const ConvShape& s = a.shape;
  check_shape(s, "conv2d_backward_data");
  const float* w = operand(c, Slot::ConvWeight, a.weight, s.weight_size(), a.prec);
  const float* dy = operand(c, Slot::ConvAct, a.dout, s.out_size(), a.prec);
  const int64_t rows = s.OH() * s.OW(), kk = s.C * s.K * s.K;
  if (pointwise(s)) return gemm(c, false, false, s.N * rows, s.C, s.OC, dy, s.OC, w, s.C, 0.0f, a.dinp, s.C);
  const ConvGeom g = geom(s);
  const int64_t nb = chunk_images(s);
  float* dcol = c.scratch.get<float>(Slot::ConvCol, nb * rows * kk);
  for (int64_t n0 = 0; n0 < s.N; n0 += nb) {
    const int64_t n = std::min(nb, s.N - n0);
    gemm(c, false, false, n * rows, kk, s.OC, dy + n0 * rows * s.OC, s.OC, w, kk, 0.0f, dcol, kk);
    col2im(a.dinp + n0 * s.H * s.W * s.C, dcol, n, g, c.s);
    OC_LAUNCHED();
  }
}

void conv2d_backward_weights(DeviceCtx& c, const Conv2dBackwardWeightsArgs& a) {
  conv2d_backward_weights_nobias(c, a);
  if (!a.dbias) return;
  const int64_t rows = a.shape.N * a.shape.OH() * a.shape.OW();
  col_sums_acc(a.dbias, c.scratch.get<double>(Slot::ColumnParts, kColChunks * a.shape.OC), a.dout, rows, a.shape.OC,
               c.s);
  OC_LAUNCHED();
}

static void conv2d_backward_weights_nobias(DeviceCtx& c, const Conv2dBackwardWeightsArgs& a) {
  const ConvShape& s = a.shape;
  check_shape(s, "conv2d_backward_weights");
  const float* dy = operand(c, Slot::ConvAct, a.dout, s.out_size(), a.prec);
  const int64_t rows = s.OH() * s.OW(), kk = s.C * s.K * s.K;
  if (pointwise(s)) {  // dweight += dout^T @ inp, accumulated by the GEMM's beta
    const float* x = operand(c, Slot::ConvCol, a.inp, s.in_size(), a.prec);
    return gemm(c, true, false, s.OC, s.C, s.N * rows, dy, s.OC, x, s.C, 1.0f, a.dweight, s.C);
  }
  const ConvGeom g = geom(s);
  const int64_t nb = chunk_images(s);
  float* col = c.scratch.get<float>(Slot::ConvCol, nb * rows * kk);
  float* dw = c.scratch.get<float>(Slot::ConvDW, s.weight_size());
  for (int64_t n0 = 0; n0 < s.N; n0 += nb) {
    const int64_t n = std::min(nb, s.N - n0);
    im2col(col, a.inp + n0 * s.H * s.W * s.C, n, g, a.prec == Prec::BF16, c.s);
    OC_LAUNCHED();
    gemm(c, true, false, s.OC, kk, n * rows, dy + n0 * rows * s.OC, s.OC, col, kk, n0 == 0 ? 0.0f : 1.0f, dw, kk);
  }
  const int* flag = s.pad > 0 ? nonfinite_flag(c, dy, s.out_size()) : nullptr;
  conv_dweight_finish(a.dweight, dw, dy, a.inp, flag, g, a.prec == Prec::BF16, c.s);
  OC_LAUNCHED();
}

// ---- depthwise (kernels_dwconv.cu) ----
namespace {
void check_dw(const DwConvShape& s, const char* op) {
  OC_CHECK(s.N > 0 && s.H > 0 && s.W > 0 && s.C > 0 && s.K > 0 && s.pad >= 0 && s.OH() > 0 && s.OW() > 0,
           "{}: bad shape N={} H={} W={} C={} K={} pad={}", op, s.N, s.H, s.W, s.C, s.K, s.pad);
}
}  // namespace

void dwconv2d_forward(DeviceCtx& c, const DwConv2dForwardArgs& a) {
  const DwConvShape& s = a.shape;
  check_dw(s, "dwconv2d_forward");
  const float* w = operand(c, Slot::ConvWeight, a.weight, s.weight_size(), a.prec);
  const float* x = operand(c, Slot::ConvAct, a.inp, s.in_size(), a.prec);
  dwconv_correlate(a.out, s.OH(), s.OW(), x, s.H, s.W, w, a.bias, s.N, s.C, s.K, s.pad, false, c.s);
  OC_LAUNCHED();
}

void dwconv2d_backward_data(DeviceCtx& c, const DwConv2dBackwardDataArgs& a) {
  const DwConvShape& s = a.shape;
  check_dw(s, "dwconv2d_backward_data");
  const float* w = operand(c, Slot::ConvWeight, a.weight, s.weight_size(), a.prec);
  const float* dy = operand(c, Slot::ConvAct, a.dout, s.out_size(), a.prec);
  dwconv_correlate(a.dinp, s.H, s.W, dy, s.OH(), s.OW(), w, nullptr, s.N, s.C, s.K, s.K - 1 - s.pad, true, c.s);
  OC_LAUNCHED();
}

void dwconv2d_backward_weights(DeviceCtx& c, const DwConv2dBackwardWeightsArgs& a) {
  const DwConvShape& s = a.shape;
  check_dw(s, "dwconv2d_backward_weights");
  const float* dy = operand(c, Slot::ConvAct, a.dout, s.out_size(), a.prec);
  const float* x = operand(c, Slot::ConvCol, a.inp, s.in_size(), a.prec);
  dwconv_dweight(a.dweight, c.scratch.get<double>(Slot::ConvDW, kColChunks * s.weight_size()), dy, x, s.N, s.H, s.W,
                 s.C, s.K, s.pad, c.s);
  OC_LAUNCHED();
  if (!a.dbias) return;
  const int64_t rows = s.N * s.OH() * s.OW();  // the bias gradient from dout as it is
  col_sums_acc(a.dbias, c.scratch.get<double>(Slot::ColumnParts, kColChunks * s.C), a.dout, rows, s.C, c.s);
  OC_LAUNCHED();
}

void batchnorm_forward(DeviceCtx& c, const BatchNormForwardArgs& a) {
  OC_CHECK(a.R > 0 && a.C > 0, "batchnorm_forward: bad shape R={} C={}", a.R, a.C);
  OC_CHECK(!a.training || a.R > 1, "batchnorm_forward: training needs more than one value per channel (R={})", a.R);
  double* part = c.scratch.get<double>(Slot::ColumnParts, kColChunks * a.C);
  double* stat = c.scratch.get<double>(Slot::BnStats, 2 * a.C);  // mean[C] doubles, then scale[C] floats
  cuda::batchnorm_forward(a.out, a.mean, a.rstd, a.running_mean, a.running_var, a.inp, a.weight, a.bias, a.R, a.C,
                          a.eps, a.momentum, a.training, part, stat, reinterpret_cast<float*>(stat + a.C), c.s);
  OC_LAUNCHED();
}

void batchnorm_backward(DeviceCtx& c, const BatchNormBackwardArgs& a) {
  OC_CHECK(a.R > 0 && a.C > 0, "batchnorm_backward: bad shape R={} C={}", a.R, a.C);
  double* part = c.scratch.get<double>(Slot::ColumnParts, 2 * kColChunks * a.C);
  float* coef = c.scratch.get<float>(Slot::BnStats, 3 * a.C);
  cuda::batchnorm_backward(a.dinp, a.dweight, a.dbias, a.dout, a.inp, a.weight, a.mean, a.rstd, a.R, a.C, a.training,
                           part, coef, c.s);
  OC_LAUNCHED();
}

}  // namespace oc::ops::cuda
