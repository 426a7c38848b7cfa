// L2 normalization and the symmetric contrastive (InfoNCE) loss of CLIP.
#pragma once
#include <cstdint>

namespace oc::ops {

// out[N,C] = inp / max(||inp||, 1e-12) (F.normalize); norm[N] saved.
template <typename T>
void l2norm_forward(T* out, T* norm, const T* inp, int64_t N, int64_t C);
// dinp assigned.
template <typename T>
void l2norm_backward(T* dinp, const T* dout, const T* out, const T* norm, int64_t N, int64_t C);

// Contrastive loss over one rank's rows against all columns:
//   logits_i = scale * img[Nl,E] @ txt_all[Na,E]^T, logits_t = scale * txt[Nl,E] @ img_all^T,
//   labels = row + label_offset, loss = (CE(logits_i) + CE(logits_t)) / 2 averaged over Nl rows.
// Single process: img_all = img, txt_all = txt, Na = Nl, label_offset = 0 (OpenCLIP's ClipLoss).
// Computes the loss and, fused, the gradients:
//   dimg[Nl,E], dtxt[Nl,E] (assigned): through the local rows only;
//   dimg_all[Na,E], dtxt_all[Na,E] (assigned; may be null): w.r.t. the gathered columns;
//   *dscale_log += d loss / d logit_scale (logit_scale = log(scale)).
// In single process call with dimg_all/dtxt_all non-null and add them to dimg/dtxt (the
// columns are the same tensors). scratch holds 2*Nl*Na elements.
template <typename T>
double clip_loss_forward_backward(T* dimg, T* dtxt, T* dimg_all, T* dtxt_all, T* dscale_log, T* scratch,
                                  const T* img, const T* txt, const T* img_all, const T* txt_all, T scale,
                                  int64_t Nl, int64_t Na, int64_t E, int64_t label_offset);

}  // namespace oc::ops
