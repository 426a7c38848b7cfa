// SigLIP's sigmoid loss (OpenCLIP 2.24 loss.py SigLipLoss), one block of it.
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

//   logits[B,M] = scale * img[B,E] @ txt[M,E]^T + bias
//   labels = +1 on the diagonal (image i with text i) when `positives`, else -1 everywhere
//   loss = -sum(logsigmoid(labels * logits)) / B   (returned)
// OpenCLIP adds one such block per text block: the own texts with positives, then every
// other rank's texts (received from the neighbours) negative-only; all divided by the local
// batch B. Fused forward + backward:
//   dimg[B,E] (accumulates: one call per text block adds into it), dtxt[M,E] (assigned),
//   *dscale_log += d loss / d logit_scale (scale = exp(logit_scale)), *dbias += d loss / d bias
//   (both host floats).
struct SiglipLossArgs {
  using Result = double;
  float* dimg;
  float* dtxt;
  Host<float> dscale_log;
  Host<float> dbias;
  const float* img;
  const float* txt;
  float scale, bias;
  int64_t B, M, E;
  bool positives;
};

}  // namespace oc::ops
