// LayerNorm over the last dimension, statistics in fp32.
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

// out[N,C] = (inp - mean) * rstd * weight + bias; saves mean[N], rstd[N] for backward.
struct LayerNormForwardArgs {
  float* out;
  float* mean;
  float* rstd;
  const float* inp;
  const float* weight;
  const float* bias;
  int64_t N, C;
  double eps;
};

// dinp[N,C] += ... (ACCUMULATES: LayerNorm sits on the residual stream),
// dweight[C] += ..., dbias[C] += ....
struct LayerNormBackwardArgs {
  float* dinp;
  float* dweight;
  float* dbias;
  const float* dout;
  const float* inp;
  const float* weight;
  const float* mean;
  const float* rstd;
  int64_t N, C;
};

}  // namespace oc::ops
