// BatchNorm2d (nn.BatchNorm2d, affine, track_running_stats) on channels-last activations
// (ops/conv.h says why): inp[R,C] with R = N*H*W rows, statistics per column c.
// Statistics are summed in double on every backend (the rows number up to B*112*112).
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

// out[R,C] = (inp - mean) * rstd * weight + bias (assigned).
// training (model.train()): mean and the biased variance of the batch, per column; the
//   running statistics are updated as PyTorch does, running = (1 - momentum) * running +
//   momentum * stat, with the UNBIASED variance var * R / (R - 1) (R > 1 required);
//   num_batches_tracked is the caller's (it does not enter the update when momentum is set).
// eval (model.eval(), or frozen by --lock-image-freeze-bn-stats): mean = running_mean,
//   rstd = 1 / sqrt(running_var + eps); the running statistics are only read.
// Both modes save the mean[C] and rstd[C] they used, for backward.
struct BatchNormForwardArgs {
  float* out;
  float* mean;
  float* rstd;
  float* running_mean;
  float* running_var;
  const float* inp;
  const float* weight;
  const float* bias;
  int64_t R, C;
  double eps, momentum;
  bool training;
};

// With xhat = (inp - mean) * rstd and the mean/rstd the forward saved:
// training: dinp = weight * rstd * (dout - mean_r(dout) - xhat * mean_r(dout * xhat));
// eval: dinp = weight * rstd * dout (the statistics are constants).
// dinp[R,C] assigned (skipped when null); dweight[C] += sum_r dout * xhat, dbias[C] +=
// sum_r dout (parameter gradients: ACCUMULATE; skipped when null). dinp may alias dout (every
// column's sums are taken before its dinp is written).
struct BatchNormBackwardArgs {
  float* dinp;
  float* dweight;
  float* dbias;
  const float* dout;
  const float* inp;
  const float* weight;
  const float* mean;
  const float* rstd;
  int64_t R, C;
  bool training;
};

}  // namespace oc::ops
