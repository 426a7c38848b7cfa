// The CPU kernels of OpenCLIP's tower options (contract: ops/tokens.h): LayerScale, the mean
// over patch tokens, the token gather of PatchDropout. Templates for float and double.
#pragma once
#include <cstdint>

#include "ops/tokens.h"

namespace oc::ops {

template <typename T>
void layer_scale_forward(T* x, const T* gamma, int64_t N, int64_t C);
template <typename T>
void layer_scale_backward(T* dgamma, T* o_dx, const T* dy, const T* gamma, int64_t N, int64_t C);
template <typename T>
void mean_tokens_forward(T* out, const T* inp, int64_t B, int64_t Tn, int64_t first, int64_t C);
template <typename T>
void mean_tokens_backward(T* dinp, const T* dout, int64_t B, int64_t Tn, int64_t first, int64_t C);
template <typename T>
void gather_tokens_forward(T* out, const T* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C);
template <typename T>
void gather_tokens_backward(T* dinp, const T* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C);

}  // namespace oc::ops
