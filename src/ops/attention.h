// Multi-head self-attention core (between in_proj and out_proj of nn.MultiheadAttention).
// qkv[B,T,3C] is in_proj's output: q = qkv[..., 0:C], k = [C:2C], v = [2C:3C]; head h uses
// columns h*D .. h*D+D-1 of each, D = C/H. Scores = q k^T / sqrt(D) (+ causal mask: key j > query
// i gets -inf), softmax, out = P v with heads concatenated: out[B,T,C].
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/gemm.h"

namespace oc::ops {

// att[B,H,T,T] keeps the softmax probabilities for backward. att null (inference, nothing
// reads them): a backend keeps no [B,H,T,T] buffer (the cpu backend computes each (b, h)
// block in the thread's cache-sized scratch); out is the same as with att given.
struct AttentionForwardArgs {
  float* out;
  float* att;
  const float* qkv;
  int64_t B, Tn, C, H;
  bool causal;
  Prec prec = Prec::F32;
};

// dqkv[B,T,3C] assigned. scratch must hold B*H*T*T elements (dP, then dS in place).
struct AttentionBackwardArgs {
  float* dqkv;
  float* scratch;
  const float* dout;
  const float* qkv;
  const float* att;
  int64_t B, Tn, C, H;
  bool causal;
  Prec prec = Prec::F32;
};

// amp_bf16: q, k, v and out are bf16 (they are only GEMM operands), the scores, softmax and
// its gradient are fp32, and P and dS are rounded to bf16 where they enter P@V, dQ and dK.
// att[B,H,T,T] keeps P in fp32; null as in AttentionForwardArgs.
struct AttentionForwardBf16Args {
  bf16* out;
  float* att;
  const bf16* qkv;
  int64_t B, Tn, C, H;
  bool causal;
};

// dqkv[B,T,3C] assigned in fp32 (in_proj's bias gradient sums it in fp32).
struct AttentionBackwardBf16Args {
  float* dqkv;
  const bf16* dout;
  const bf16* qkv;
  const float* att;
  int64_t B, Tn, C, H;
};

}  // namespace oc::ops
