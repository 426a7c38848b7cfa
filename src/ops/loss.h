// L2 normalization and the symmetric contrastive (InfoNCE) loss of CLIP.
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

// out[N,C] = inp / max(||inp||, 1e-12) (F.normalize); norm[N] saved.
struct L2NormForwardArgs {
  float* out;
  float* norm;
  const float* inp;
  int64_t N, C;
};

// dinp assigned.
struct L2NormBackwardArgs {
  float* dinp;
  const float* dout;
  const float* out;
  const float* norm;
  int64_t N, C;
};

// Contrastive loss over one rank's rows against all columns; returns the loss:
//   logits_i = scale * img[Nl,E] @ txt_all[Na,E]^T, logits_t = scale * txt[Nl,E] @ img_all^T,
//   labels = row + label_offset, loss = (CE(logits_i) + CE(logits_t)) / 2 averaged over Nl rows.
// Single process: img_all = img, txt_all = txt, Na = Nl, label_offset = 0 (OpenCLIP's ClipLoss).
// Computes the loss and, fused, the gradients:
//   dimg[Nl,E], dtxt[Nl,E] (assigned): through the local rows only;
//   dimg_all[Na,E], dtxt_all[Na,E] (assigned; may be null): w.r.t. the gathered columns;
//   *dscale_log (a host float) += d loss / d logit_scale (logit_scale = log(scale)).
// In single process call with dimg_all/dtxt_all non-null and add them to dimg/dtxt (the
// columns are the same tensors). scratch holds 2*Nl*Na elements.
struct ClipLossArgs {
  using Result = double;
  float* dimg;
  float* dtxt;
  float* dimg_all;
  float* dtxt_all;
  Host<float> dscale_log;
  float* scratch;
  const float* img;
  const float* txt;
  const float* img_all;
  const float* txt_all;
  float scale;
  int64_t Nl, Na, E, label_offset;
};

}  // namespace oc::ops
