// EVA02's 2D rotary position embedding (timm's RotaryEmbeddingCat + apply_rot_embed_cat), in
// place on the q and k parts of attention's packed qkv buffer [B, T, 3W] (ops/attention.h: q at
// columns [0, W), k at [W, 2W), head h at h*D .. h*D+D-1, D = W/H). Tokens [0, prefix) (the
// class token) are left as they are; token t >= prefix uses row t - prefix of the table.
//
// sincos[T - prefix, 2D] is timm's cached `pos_embed` buffer: sin in columns [0, D), cos in
// [D, 2D), each repeated over the pairs (sin[2i] == sin[2i+1]). For each pair (x0, x1) =
// (x[2i], x[2i+1]) of a head, with s = sin[2i], c = cos[2i]:
//   forward:  (x0 c - x1 s, x1 c + x0 s)      (x * cos + rot(x) * sin, rot(x) = (-x1, x0))
//   backward: (g0 c + g1 s, g1 c - g0 s)      (the transposed rotation, on the gradient)
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

struct RopeForwardArgs {
  float* qkv;           // [B, T, 3W], q and k rotated in place
  const float* sincos;  // [T - prefix, 2 D]
  int64_t B, T, W, H, prefix;
};

// dqkv [B, T, 3W]: the gradient w.r.t. the rotated q and k, turned in place into the gradient
// w.r.t. the unrotated ones (the v part is not touched).
struct RopeBackwardArgs {
  float* dqkv;
  const float* sincos;
  int64_t B, T, W, H, prefix;
};

}  // namespace oc::ops
