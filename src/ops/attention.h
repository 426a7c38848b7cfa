// Multi-head self-attention core (between in_proj and out_proj of nn.MultiheadAttention).
// qkv[B,T,3C] is in_proj's output: q = qkv[..., 0:C], k = [C:2C], v = [2C:3C]; head h uses
// columns h*D .. h*D+D-1 of each, D = C/H. Scores = q k^T / sqrt(D) (+ causal mask: key j > query
// i gets -inf), softmax in the op's type, out = P v with heads concatenated: out[B,T,C].
#pragma once
#include <cstdint>

#include "ops/gemm.h"

namespace oc::ops {

// att[B,H,T,T] keeps the softmax probabilities for backward.
template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H, bool causal,
                       Prec prec = Prec::F32);

// dqkv[B,T,3C] assigned. scratch must hold B*H*T*T elements (dP, then dS in place).
template <typename T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int64_t B, int64_t Tn,
                        int64_t C, int64_t H, bool causal, Prec prec = Prec::F32);

}  // namespace oc::ops
