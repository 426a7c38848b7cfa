// Embeddings: patches of the image (conv1 with kernel = stride = patch, no bias), the class
// token, positional embeddings, token embeddings, and row gathers for pooling.
#pragma once
#include <cstdint>

#include "ops/gemm.h"

namespace oc::ops {

// img[B,3,S,S] (normalized, CHW) -> patches[B*G*G, 3*P*P] in conv1.weight's (c, ky, kx) order,
// G = S/P, patch index = gy*G + gx (row-major over the grid, as OpenCLIP flattens).
template <typename T>
void im2patches(T* patches, const T* img, int64_t B, int64_t S, int64_t P);

// x[B, G*G+1, C]: row 0 = cls[C] + pos[0], row 1+i = patch_out[b, i] + pos[1+i].
template <typename T>
void vit_embed_forward(T* x, const T* patch_out, const T* cls, const T* pos, int64_t B, int64_t Np, int64_t C);
// dpatch_out[B,Np,C] assigned; dcls[C] += sum_b dx[b,0]; dpos[Np+1,C] += sum_b dx[b].
template <typename T>
void vit_embed_backward(T* dpatch_out, T* dcls, T* dpos, const T* dx, int64_t B, int64_t Np, int64_t C);

// x[B,T,C] = wte[tokens[b,t]] + wpe[t] for t < Tn (wpe has at least Tn rows).
template <typename T>
void token_embed_forward(T* x, const int32_t* tokens, const T* wte, const T* wpe, int64_t B, int64_t Tn,
                         int64_t C, int64_t V);
// dwte[V,C] += scatter of dx; dwpe[t] += sum_b dx[b,t]. Deterministic (no atomics).
template <typename T>
void token_embed_backward(T* dwte, T* dwpe, const T* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                          int64_t C, int64_t V);

// out[b] = inp[b, idx[b]] for inp[B,T,C]. Backward: dinp[b, idx[b]] += dout[b] (dinp must
// be zeroed or hold other gradient by the caller: ACCUMULATES).
template <typename T>
void gather_rows_forward(T* out, const T* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t C);
template <typename T>
void gather_rows_backward(T* dinp, const T* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t C);

}  // namespace oc::ops
