// The ops of OpenCLIP's VisionTransformer / ResidualAttentionBlock options: LayerScale
// (ls_init_value), the mean over patch tokens (pool_type "avg") and the token gather of
// PatchDropout.
#pragma once
#include <cstdint>
#include <span>

#include "ops/op_args.h"

namespace oc::ops {

// LayerScale: x[N,C] *= gamma[C] (in place).
struct LayerScaleForwardArgs {
  float* x;
  const float* gamma;
  int64_t N, C;
};

// o_dx[N,C] holds the unscaled branch output o on entry and gamma * dy on return (one buffer
// serves both); dgamma[C] += sum_n dy[n] * o[n].
struct LayerScaleBackwardArgs {
  float* dgamma;
  float* o_dx;
  const float* dy;
  const float* gamma;
  int64_t N, C;
};

// out[b] = mean over t in [first, Tn) of inp[b, t] for inp[B,Tn,C].
struct MeanTokensForwardArgs {
  float* out;
  const float* inp;
  int64_t B, Tn, first, C;
};

// dinp[b, t] += dout[b] / (Tn - first) for t >= first (ACCUMULATES).
struct MeanTokensBackwardArgs {
  float* dinp;
  const float* dout;
  int64_t B, Tn, first, C;
};

// out[b, k] = inp[b, idx[b*K + k]] for inp[B,Tn,C], out[B,K,C]; idx: B*K host values in [0, Tn).
struct GatherTokensForwardArgs {
  float* out;
  const float* inp;
  std::span<const int32_t> idx;
  int64_t B, Tn, K, C;
};

// dinp[b, idx[b*K + k]] += dout[b, k] (ACCUMULATES; rows not gathered are left as they are).
struct GatherTokensBackwardArgs {
  float* dinp;
  const float* dout;
  std::span<const int32_t> idx;
  int64_t B, Tn, K, C;
};

}  // namespace oc::ops
