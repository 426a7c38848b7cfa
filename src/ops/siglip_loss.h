// SigLIP's sigmoid loss (OpenCLIP 2.24 loss.py SigLipLoss), one block of it:
//   logits[B,M] = scale * img[B,E] @ txt[M,E]^T + bias
//   labels = +1 on the diagonal (image i with text i) when `positives`, else -1 everywhere
//   loss = -sum(logsigmoid(labels * logits)) / B
// OpenCLIP adds one such block per text block: the own texts with positives, then every
// other rank's texts (received from the neighbours) negative-only; all divided by the local
// batch B. Fused forward + backward:
//   dimg[B,E] (accumulates: one call per text block adds into it), dtxt[M,E] (assigned),
//   *dscale_log += d loss / d logit_scale (scale = exp(logit_scale)), *dbias += d loss / d bias.
#pragma once
#include <cstdint>

namespace oc::ops {

template <typename T>
double siglip_loss_forward_backward(T* dimg, T* dtxt, T* dscale_log, T* dbias, const T* img, const T* txt, T scale,
                                    T bias, int64_t B, int64_t M, int64_t E, bool positives);

}  // namespace oc::ops
