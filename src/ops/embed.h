// Embeddings: patches of the image (conv1 with kernel = stride = patch, no bias), the class
// token, positional embeddings, token embeddings, and row gathers for pooling.
#pragma once
#include <cstdint>
#include <span>

#include "ops/op_args.h"

namespace oc::ops {

// img[B,3,S,S] (normalized, CHW) -> patches[B*G*G, 3*P*P] in conv1.weight's (c, ky, kx) order,
// G = S/P, patch index = gy*G + gx (row-major over the grid, as OpenCLIP flattens). img is
// memory of the backend like every pointer (the batch is uploaded with copy_from_host).
struct Im2PatchesArgs {
  float* patches;
  const float* img;
  int64_t B, S, P;
};

// x[B, G*G+1, C]: row 0 = cls[C] + pos[0], row 1+i = patch_out[b, i] + pos[1+i].
struct VitEmbedForwardArgs {
  float* x;
  const float* patch_out;
  const float* cls;
  const float* pos;
  int64_t B, Np, C;
};

// dpatch_out[B,Np,C] assigned; dcls[C] += sum_b dx[b,0]; dpos[Np+1,C] += sum_b dx[b].
struct VitEmbedBackwardArgs {
  float* dpatch_out;
  float* dcls;
  float* dpos;
  const float* dx;
  int64_t B, Np, C;
};

// x[B,T,C] = wte[tokens[b,t]] + wpe[t] for t < Tn (wpe has at least Tn rows); tokens: B*Tn
// host values in [0, V).
struct TokenEmbedForwardArgs {
  float* x;
  std::span<const int32_t> tokens;
  const float* wte;
  const float* wpe;
  int64_t B, Tn, C, V;
};

// dwte[V,C] += scatter of dx; dwpe[t] += sum_b dx[b,t]. Deterministic (no atomics).
struct TokenEmbedBackwardArgs {
  float* dwte;
  float* dwpe;
  const float* dx;
  std::span<const int32_t> tokens;
  int64_t B, Tn, C, V;
};

// out[b] = inp[b, idx[b]] for inp[B,Tn,C]; idx: B host values in [0, Tn).
struct GatherRowsForwardArgs {
  float* out;
  const float* inp;
  std::span<const int32_t> idx;
  int64_t B, Tn, C;
};

// dinp[b, idx[b]] += dout[b] (ACCUMULATES: dinp must be zeroed or hold other gradient).
struct GatherRowsBackwardArgs {
  float* dinp;
  const float* dout;
  std::span<const int32_t> idx;
  int64_t B, Tn, C;
};

}  // namespace oc::ops
