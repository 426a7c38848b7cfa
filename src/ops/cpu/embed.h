// The CPU kernels of the embeddings and row gathers (contract: ops/embed.h), templates for
// float and double. Token ids and indices are host arrays.
#pragma once
#include <cstdint>

#include "ops/embed.h"

namespace oc::ops {

template <typename T>
void im2patches(T* patches, const T* img, int64_t B, int64_t S, int64_t P);
template <typename T>
void vit_embed_forward(T* x, const T* patch_out, const T* cls, const T* pos, int64_t B, int64_t Np, int64_t C);
template <typename T>
void vit_embed_backward(T* dpatch_out, T* dcls, T* dpos, const T* dx, int64_t B, int64_t Np, int64_t C);
template <typename T>
void token_embed_forward(T* x, const int32_t* tokens, const T* wte, const T* wpe, int64_t B, int64_t Tn,
                         int64_t C, int64_t V);
template <typename T>
void token_embed_backward(T* dwte, T* dwpe, const T* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                          int64_t C, int64_t V);
template <typename T>
void gather_rows_forward(T* out, const T* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t C);
template <typename T>
void gather_rows_backward(T* dinp, const T* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t C);

}  // namespace oc::ops
