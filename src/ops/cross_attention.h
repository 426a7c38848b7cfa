// Multi-head cross attention without a mask: Tq queries attend over Tk keys/values (attention
// pooling: timm's AttentionPoolLatent, CLIP's AttentionPool2d; any Tq, Tk >= 1). The core
// between the projections of nn.MultiheadAttention / F.scaled_dot_product_attention.
// Layout: q is [B,Tq] rows of stride ldq, k and v are [B,Tk] rows of strides ldk and ldv
// (elements; batch b's rows start at b*Tq*ldq, b*Tk*ldk, b*Tk*ldv); head h uses columns
// h*D .. h*D+D-1 of each row, D = C/H, so k and v may interleave in one buffer (a fused kv
// linear: v = k + C, ldk = ldv = 2C). Scores = q k^T / sqrt(D), softmax over all Tk keys in
// the op's type (fp32), out = P v with heads concatenated: out[B,Tq,C], contiguous.
// Prec::BF16 rounds every GEMM operand to bf16 where it enters its product (q, k, v, P; in
// backward dO, P and dS), the amp_bf16 rule of ops/attention.h; everything else stays fp32.
#pragma once
#include <cstdint>

#include "ops/gemm.h"

namespace oc::ops {

// out[B,Tq,C] and att[B,H,Tq,Tk] (the softmax probabilities, kept for backward) assigned.
struct CrossAttentionForwardArgs {
  float* out;
  float* att;
  const float* q;
  const float* k;
  const float* v;
  int64_t ldq, ldk, ldv;
  int64_t B, Tq, Tk, C, H;
  Prec prec = Prec::F32;
};

// dq, dk, dv assigned, in the layouts (and strides) of q, k, v: columns 0..C-1 of each row are
// written, the rest of a row is left alone (so dk and dv may interleave like k and v). They
// must not overlap each other's written columns. scratch holds B*H*Tq*Tk elements (dP, then
// dS in place; contents undefined after).
struct CrossAttentionBackwardArgs {
  float* dq;
  float* dk;
  float* dv;
  float* scratch;
  const float* dout;
  const float* q;
  const float* k;
  const float* v;
  const float* att;
  int64_t ldq, ldk, ldv;
  int64_t B, Tq, Tk, C, H;
  Prec prec = Prec::F32;
};

}  // namespace oc::ops
