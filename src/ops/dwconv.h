// Depthwise 2-D convolution with bias (ConvNeXt's conv_dw: nn.Conv2d(C, C, K, padding=pad,
// groups=C, bias=True)): one K x K kernel per channel, stride 1, zero padding `pad` on every
// side (ConvNeXt: K 7, pad 3, the output as large as the input).
//
// Layout: activations channels-last as ops/conv.h, inp[N,H,W,C] and out[N,OH,OW,C]; the
// weight is PyTorch's [C,1,K,K] (the state_dict's layout), the bias [C].
// OH = H + 2*pad - K + 1, likewise OW.
//
// Precision: F32, or BF16 (amp_bf16, as ops/conv.h): inp / dout and weight rounded to bfloat16,
// products accumulated in fp32; the bias and every gradient output stay fp32.
#pragma once
#include <cstdint>

#include "ops/gemm.h"
#include "ops/op_args.h"

namespace oc::ops {

struct DwConvShape {
  int64_t N, H, W, C, K, pad;
  int64_t OH() const { return H + 2 * pad - K + 1; }
  int64_t OW() const { return W + 2 * pad - K + 1; }
  int64_t in_size() const { return N * H * W * C; }         // inp, dinp
  int64_t out_size() const { return N * OH() * OW() * C; }  // out, dout
  int64_t weight_size() const { return C * K * K; }         // weight, dweight
};

// out[n,oh,ow,c] = bias[c] + sum over taps (i,j) inside the image of
// inp[n, oh-pad+i, ow-pad+j, c] * weight[c,0,i,j] (assigned; bias may be null: none).
struct DwConv2dForwardArgs {
  float* out;
  const float* inp;
  const float* weight;
  const float* bias;
  DwConvShape shape;
  Prec prec = Prec::F32;
};

// dinp[N,H,W,C] = the transposed convolution of dout (assigned, every element).
struct DwConv2dBackwardDataArgs {
  float* dinp;
  const float* dout;
  const float* weight;
  DwConvShape shape;
  Prec prec = Prec::F32;
};

// dweight[c,0,i,j] += sum over n and output positions of dout * inp at the tap, dbias[c] +=
// sum of dout[..., c] (ACCUMULATE: parameter gradients; dbias may be null).
struct DwConv2dBackwardWeightsArgs {
  float* dweight;
  float* dbias;
  const float* dout;
  const float* inp;
  DwConvShape shape;
  Prec prec = Prec::F32;
};

}  // namespace oc::ops
