// Multi-head self-attention core (between in_proj and out_proj of nn.MultiheadAttention).
// qkv[B,T,3C] is in_proj's output: q = qkv[..., 0:C], k = [C:2C], v = [2C:3C]; head h uses
// columns h*D .. h*D+D-1 of each, D = C/H. Scores = q k^T / sqrt(D) (+ causal mask: key j > query
// i gets -inf), softmax in the op's type, out = P v with heads concatenated: out[B,T,C].
#pragma once
#include <cstdint>

#include "core/bf16.h"
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

// amp_bf16, one kernel per (batch, head) with no oneDNN primitive: q, k, v and out are bf16
// (they are only GEMM operands), the scores, softmax and its gradient are fp32, and P and dS
// are rounded to bf16 where they enter P@V, dQ and dK. att[B,H,T,T] keeps P in fp32.
void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                            bool causal);
// dqkv[B,T,3C] assigned in fp32 (in_proj's bias gradient sums it in fp32).
void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B, int64_t Tn,
                             int64_t C, int64_t H);

namespace cpu {
// The kernel attention_*_bf16 runs on this CPU: "avx512" (register-tiled fp32 FMAs on widened
// bf16 with the softmax fused, where cpuid reports AVX-512 F/BW/VL/DQ) or "sgemm" (bf16
// widened to fp32 in scratch, dnnl_sgemm per head, a separate softmax pass).
const char* attention_bf16_kernel();
// Force the sgemm kernel even where AVX-512 exists (tests run both).
void set_attention_bf16_fallback(bool on);
}  // namespace cpu

}  // namespace oc::ops
