// Pooling of ModifiedResNet on channels-last activations (ops/conv.h): the average pool with
// kernel = stride (the stem's AvgPool2d(2) and the anti-aliased downsample's AvgPool2d(stride)),
// and AttentionPool2d's token matrix (the mean token prepended, the positional embedding added).
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

// out[N,OH,OW,C] = mean of the k x k window of inp[N,H,W,C] at (oh*k, ow*k), OH = H / k,
// OW = W / k (floor: trailing rows and columns are not read, as nn.AvgPool2d(k)).
struct AvgPoolForwardArgs {
  float* out;
  const float* inp;
  int64_t N, H, W, C, k;
};

// dinp[N,H,W,C] = dout of the window / (k*k) (assigned; 0 in the rows/columns no window reads).
struct AvgPoolBackwardArgs {
  float* dinp;
  const float* dout;
  int64_t N, H, W, C, k;
};

// x[N,1+HW,C]: x[n,0] = mean_t feat[n,t] + pos[0], x[n,1+t] = feat[n,t] + pos[1+t], for the
// feature map feat[N,HW,C] (channels-last: its tokens) and pos[1+HW,C]
// (attnpool.positional_embedding).
struct AttnPoolTokensForwardArgs {
  float* x;
  const float* feat;
  const float* pos;
  int64_t N, HW, C;
};

// dfeat[n,t] = dx[n,1+t] + dx[n,0] / HW (assigned); dpos[j] += sum_n dx[n,j] (ACCUMULATES;
// skipped when null).
struct AttnPoolTokensBackwardArgs {
  float* dfeat;
  float* dpos;
  const float* dx;
  int64_t N, HW, C;
};

}  // namespace oc::ops
