// Launchers of the fused CUDA kernels that replaced the host fallbacks: attention
// (kernels_attention.cu, kernels_xattn.cu), the row passes of the two losses (kernels_loss.cu) and the amp_bf16
// passes (kernels_bf16.cu). Device pointers, sizes, the backend's stream. Plain C++ (included by
// the backend's .cpp files). Those returning cudaError_t report the launch; the others are
// checked by the caller with cudaGetLastError(). First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "ops/cuda/kernels.h"

namespace oc::ops::cuda {

// ---- attention (one block per (batch, head), K/V in shared memory) ----
// Dynamic shared memory one block needs for T tokens of head width D; the backend compares it
// with the device's opt-in limit (cudaDevAttrMaxSharedMemoryPerBlockOptin) before launching.
size_t attention_smem_bytes(int64_t T, int64_t D);
// round_bf16: Prec::BF16 (operands rounded to bf16 where they enter a product).
cudaError_t attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t C, int64_t H,
                              bool causal, bool round_bf16, cudaStream_t s);
cudaError_t attention_forward_bf16(bf16_t* out, float* att, const bf16_t* qkv, int64_t B, int64_t T, int64_t C,
                                   int64_t H, bool causal, cudaStream_t s);
// dS: B*H*T*T floats of scratch.
cudaError_t attention_backward(float* dqkv, float* dS, const float* dout, const float* qkv, const float* att, int64_t B,
                               int64_t T, int64_t C, int64_t H, bool round_bf16, cudaStream_t s);
cudaError_t attention_backward_bf16(float* dqkv, float* dS, const bf16_t* dout, const bf16_t* qkv, const float* att,
                                    int64_t B, int64_t T, int64_t C, int64_t H, cudaStream_t s);

// ---- attention of Tq query rows over Tk keys, strided rows (kernels_xattn.cu): cross
// attention (ops/cross_attention.h), and self-attention too long for the kernels above (q, k, v
// the thirds of each qkv row: ld 3C, Tq = Tk = T). No shared-memory bound on Tk; the head
// width D = C / H must be at most xattn_max_head_dim(). ----
struct XAttnShape {
  int64_t ldq, ldk, ldv, B, Tq, Tk, C, H;
};
int64_t xattn_max_head_dim();
// out[B,Tq,C] (contiguous), att[B,H,Tq,Tk]; causal (Tq == Tk only): key t visible to row i when t <= i.
cudaError_t xattn_forward(float* out, float* att, const float* q, const float* k, const float* v, const XAttnShape& x,
                          bool causal, bool round_bf16, cudaStream_t s);
cudaError_t xattn_forward_bf16(bf16_t* out, float* att, const bf16_t* q, const bf16_t* k, const bf16_t* v,
                               const XAttnShape& x, bool causal, cudaStream_t s);
// dq, dk, dv assigned (columns 0..C-1 of their rows; dout is [B,Tq,C] contiguous); dS: B*H*Tq*Tk
// floats of scratch. A causal mask is already in att.
cudaError_t xattn_backward(float* dq, float* dk, float* dv, float* dS, const float* dout, const float* q,
                           const float* k, const float* v, const float* att, const XAttnShape& x, bool round_bf16,
                           cudaStream_t s);
cudaError_t xattn_backward_bf16(float* dq, float* dk, float* dv, float* dS, const bf16_t* dout, const bf16_t* q,
                                const bf16_t* k, const bf16_t* v, const float* att, const XAttnShape& x,
                                cudaStream_t s);

// ---- self-attention as batched GEMMs (attention_gemm.cpp): the memory passes around them ----
// Rows [B, T, parts*C] (parts 1: dO, 3: qkv) to head-major [parts][B*H][T][D] (bf16 rounds to
// nearest even) and head-major fp32 back to rows (bf16 rounds once).
void attn_pack(float* dst, const float* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts, cudaStream_t s);
void attn_pack(bf16_t* dst, const float* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts, cudaStream_t s);
void attn_pack(bf16_t* dst, const bf16_t* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts, cudaStream_t s);
void attn_unpack(float* dst, const float* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts, cudaStream_t s);
void attn_unpack(bf16_t* dst, const float* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts, cudaStream_t s);
// Softmax of score rows S[rows][lds] (already scaled; query r % T of its head; causal: keys
// j <= i): att[rows][T] = P in fp32, pop[rows][lds] = P as a GEMM operand when non-null.
void attn_softmax(float* att, float* pop, const float* S, int64_t rows, int64_t T, int64_t lds, bool causal,
                  cudaStream_t s);
void attn_softmax(float* att, bf16_t* pop, const float* S, int64_t rows, int64_t T, int64_t lds, bool causal,
                  cudaStream_t s);
// ds[rows][ld] = scale * P * (dP - rowsum(dP * P)) from dP[rows][ld] and att[rows][T] (ds may be
// dP, fp32); pop[rows][ld] = P as an operand when non-null.
void attn_softmax_backward(float* ds, float* pop, const float* dP, const float* att, int64_t rows, int64_t T,
                           int64_t ld, float scale, cudaStream_t s);
void attn_softmax_backward(bf16_t* ds, bf16_t* pop, const float* dP, const float* att, int64_t rows, int64_t T,
                           int64_t ld, float scale, cudaStream_t s);

// ---- losses: per-row passes over logits already in L (cuBLASLt), then a fixed-order sum ----
// CLIP's cross entropy on rows of L[Nl, Na] (raw dots): L becomes d loss / d dots; per row r,
// parts[r] = loss term, parts[Nl + r] = d/dlogit_scale term (doubles). Label of row r: r + offset.
void clip_ce_rows(float* L, double* parts, int64_t Nl, int64_t Na, int64_t offset, float scale, cudaStream_t s);
// SigLIP on G[B, M] (raw dots): G becomes d loss / d dots; parts[3 * B]: per row loss, d scale
// (d loss / d scale, not yet times scale), d bias.
void siglip_rows(float* G, double* parts, int64_t B, int64_t M, float scale, float bias, bool positives,
                 cudaStream_t s);
// out[k] = sum over r < n of parts[k * n + r], in order, for k < nsums (one block).
void sum_parts(double* out, const double* parts, int64_t n, int nsums, cudaStream_t s);

// ---- amp_bf16 passes ----
void layernorm_forward_bf16(bf16_t* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                            int64_t N, int64_t C, double eps, cudaStream_t s);
// xm += x, then layernorm_forward_bf16 of xm.
void add_layernorm_forward_bf16(float* xm, bf16_t* out, float* mean, float* rstd, const float* x, const float* w,
                                const float* b, int64_t N, int64_t C, double eps, cudaStream_t s);
void act_forward_bf16(bf16_t* out, const float* inp, int64_t n, int act, cudaStream_t s);
// The column passes over [M, N] (dbias[N] += column sums of d, in double, fixed order):
//   kind 0: d = dout (bias_grad_to_bf16), kind 1: d = dout * act'(inp) (act_backward_bf16),
//   kind 2: kind 1 and act16 = bf16(act(inp)) (act_value_grad_bf16). d16 = bf16(d).
// partial: kColChunks * N doubles of scratch (used when dbias is non-null).
void column_pass_bf16(int kind, bf16_t* d16, bf16_t* act16, float* dbias, double* partial, const float* dout,
                      const float* inp, int64_t M, int64_t N, int act, cudaStream_t s);

}  // namespace oc::ops::cuda
