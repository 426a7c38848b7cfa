// 2-D convolution, with an optional bias (ModifiedResNet's convs have none: a BatchNorm follows
// each; ConvNeXt's stem and downsample convs have one),
// square kernel K, one stride and one zero padding on every side, groups = dilation = 1.
//
// Layout: activations are channels-last, inp[N,H,W,C] and out[N,OH,OW,OC] (NHWC), the
// weight is PyTorch's [OC,C,K,K] (OIHW, the state_dict's layout, so checkpoints need no
// conversion). Channels-last because oneDNN's fast CPU convolutions (brgemm) run on it
// without a reorder of the activations, BatchNorm's per-channel statistics are then column
// sums over rows [N*H*W, C] as in LayerNorm's backward, and the feature map that
// AttentionPool2d reads is already its token matrix [N, H*W, C].
// OH = (H + 2*pad - K) / stride + 1 (floor), likewise OW.
//
// Precision: F32, or BF16 (amp_bf16): inp and weight rounded to bfloat16, products
// accumulated in fp32, as ops/gemm.h's Prec::BF16 and autocast's conv. The output of the
// gradient ops is fp32 in both.
#pragma once
#include <cstdint>

#include "ops/gemm.h"
#include "ops/op_args.h"

namespace oc::ops {

// The output size along one dimension of extent `in`.
constexpr int64_t conv_out_size(int64_t in, int64_t K, int64_t stride, int64_t pad) {
  return (in + 2 * pad - K) / stride + 1;
}

// The geometry every conv op shares: batch N, input H x W x C, OC output channels, square
// kernel K, stride, zero padding.
struct ConvShape {
  int64_t N, H, W, C, OC, K, stride, pad;
  int64_t OH() const { return conv_out_size(H, K, stride, pad); }
  int64_t OW() const { return conv_out_size(W, K, stride, pad); }
  int64_t in_size() const { return N * H * W * C; }        // inp, dinp
  int64_t out_size() const { return N * OH() * OW() * OC; }  // out, dout
  int64_t weight_size() const { return OC * C * K * K; }    // weight, dweight
};

// out[N,OH,OW,OC] = act(conv(inp, weight) + bias[OC] + residual[N,OH,OW,OC]) (assigned; bias,
// residual null: none; act: ReLU where `relu`, else the identity; bias and residual fp32 in
// both precisions). `residual` may be `out` itself (its contents are read first): the
// inference path of ModifiedResNet (BatchNorm folded into weight and bias, the Bottleneck's
// identity and final ReLU in the conv's epilogue).
struct Conv2dForwardArgs {
  float* out;
  const float* inp;
  const float* weight;
  ConvShape shape;
  Prec prec = Prec::F32;
  const float* bias = nullptr;
  const float* residual = nullptr;
  bool relu = false;
};

// dinp[N,H,W,C] = conv_transpose(dout, weight) (assigned: every input position, also those
// no window reaches, which get 0).
struct Conv2dBackwardDataArgs {
  float* dinp;
  const float* dout;
  const float* weight;
  ConvShape shape;
  Prec prec = Prec::F32;
};

// dweight[OC,C,K,K] += sum over n, output positions of dout * inp, dbias[OC] += the column
// sums of dout as it is (ACCUMULATE: parameter gradients; dbias null: none).
struct Conv2dBackwardWeightsArgs {
  float* dweight;
  const float* dout;
  const float* inp;
  ConvShape shape;
  Prec prec = Prec::F32;
  float* dbias = nullptr;
};

}  // namespace oc::ops
