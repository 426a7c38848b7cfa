// The CPU kernels of the L2 normalization and the losses (contracts: ops/loss.h,
// ops/siglip_loss.h), templates for float and double. The scalar gradients are host values
// (T*: *dscale_log += ...).
#pragma once
#include <cstdint>

#include "ops/loss.h"
#include "ops/siglip_loss.h"

namespace oc::ops {

template <typename T>
void l2norm_forward(T* out, T* norm, const T* inp, int64_t N, int64_t C);
template <typename T>
void l2norm_backward(T* dinp, const T* dout, const T* out, const T* norm, int64_t N, int64_t C);
template <typename T>
double clip_loss_forward_backward(T* dimg, T* dtxt, T* dimg_all, T* dtxt_all, T* dscale_log, T* scratch, const T* img,
                                  const T* txt, const T* img_all, const T* txt_all, T scale, int64_t Nl, int64_t Na,
                                  int64_t E, int64_t label_offset);
template <typename T>
double siglip_loss_forward_backward(T* dimg, T* dtxt, T* dscale_log, T* dbias, const T* img, const T* txt, T scale,
                                    T bias, int64_t B, int64_t M, int64_t E, bool positives);

}  // namespace oc::ops
