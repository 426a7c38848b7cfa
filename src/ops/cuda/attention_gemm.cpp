// Self-attention on the tensor cores: the four products per head (Q K^T, P V and, backward,
// dO V^T, dS K, dS^T Q, P^T dO) as strided-batched cuBLASLt GEMMs over the B*H heads, in bf16
// with fp32 accumulation under amp_bf16 / Prec::BF16 and in plain fp32 otherwise; the memory
// passes between them in kernels_attn_gemm.cu. Written after the first GPU run (H200,
// 2026-12-04), where the one-block-per-head kernels (kernels_attention.cu: fp32 FMAs from shared
// memory, one block of 8 warps per SM at T = 257) were the likely bottleneck: ViT-L-14 training
// at 0.18x PyTorch, encode_image at 0.24x. NOT YET RUN ON A GPU: the session's second device call
// was refused, so it is opt-in (OPENCLIP_CUDA_ATTENTION=gemm) until scripts/gpu-check.sh's
// gemm steps pass; then it becomes the default.
// Rounding points are the reference's (ops/attention.h): q, k, v, dO and P, dS as operands;
// scores, softmax and its gradient in fp32. Head-major operands [B*H][T][D]; score matrices
// [B*H][T][Tp] with rows padded to 8 elements (16-byte rows for the bf16 tensor-core kernels).
#include "ops/cuda/attention_gemm.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "core/check.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kernels_fused.h"

namespace oc::ops::cuda {
namespace {

struct Dims {
  int64_t B, T, C, H, D, BH, Tp;
  int64_t head() const { return T * D; }     // one head's Q, K, V, O or their gradients
  int64_t scores() const { return T * Tp; }  // one head's padded score matrix
};
Dims dims(int64_t B, int64_t T, int64_t C, int64_t H) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
  return {B, T, C, H, C / H, B * H, (T + 7) / 8 * 8};
}

// Row-major C[M,N] = alpha op(A) op(B), one matrix per head, strides in elements.
void bgemm(DeviceCtx& c, const Dims& d, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const void* A,
           int64_t lda, int64_t sa, const void* B, int64_t ldb, int64_t sb, float* C, int64_t ldc, int64_t sc,
           bool bf16) {
  c.lt.run(LtGemm{ta, tb, M, N, K, A, lda, sa, B, ldb, sb, C, ldc, sc, d.BH, bf16, alpha, 0.0f}, c.s);
}

float scale_of(const Dims& d) { return 1.0f / std::sqrt(float(d.D)); }  // as kernels_attention.cu

// Op: the GEMM operand type (float or bf16_t); In: qkv's; Out: out's.
template <class Op, class In, class Out>
void forward(DeviceCtx& c, Out* out, float* att, const In* qkv, const Dims& d, bool causal) {
  constexpr bool lp = std::is_same_v<Op, bf16_t>;
  if (d.BH == 0 || d.T == 0) return;
  Op* qkvh = c.scratch.get<Op>(Slot::AttnPack, 3 * d.BH * d.head());
  attn_pack(qkvh, qkv, d.B, d.T, d.C, d.H, 3, c.s);
  const Op *Q = qkvh, *K = Q + d.BH * d.head(), *V = K + d.BH * d.head();
  float* S = c.scratch.get<float>(Slot::AttnScores, d.BH * d.scores());
  bgemm(c, d, false, true, d.T, d.T, d.D, scale_of(d), Q, d.D, d.head(), K, d.D, d.head(), S, d.Tp, d.scores(), lp);
  const void* P = att;  // fp32: att itself is the P@V operand
  int64_t ldp = d.T;
  if constexpr (lp) {
    bf16_t* pb = c.scratch.get<bf16_t>(Slot::AttnProbs, d.BH * d.scores());
    attn_softmax(att, pb, S, d.BH * d.T, d.T, d.Tp, causal, c.s);
    P = pb, ldp = d.Tp;
  } else {
    attn_softmax(att, static_cast<float*>(nullptr), S, d.BH * d.T, d.T, d.Tp, causal, c.s);
  }
  OC_CUDA_CHECK(cudaGetLastError());
  float* O = c.scratch.get<float>(Slot::AttnOut, d.BH * d.head());
  bgemm(c, d, false, false, d.T, d.D, d.T, 1.0f, P, ldp, d.T * ldp, V, d.D, d.head(), O, d.D, d.head(), lp);
  attn_unpack(out, O, d.B, d.T, d.C, d.H, 1, c.s);
  OC_CUDA_CHECK(cudaGetLastError());
}

template <class Op, class In>
void backward(DeviceCtx& c, float* dqkv, const In* dout, const In* qkv, const float* att, const Dims& d) {
  constexpr bool lp = std::is_same_v<Op, bf16_t>;
  if (d.BH == 0 || d.T == 0) return;
  Op* qkvh = c.scratch.get<Op>(Slot::AttnPack, 3 * d.BH * d.head());
  attn_pack(qkvh, qkv, d.B, d.T, d.C, d.H, 3, c.s);
  Op* dO = c.scratch.get<Op>(Slot::AttnPackGrad, d.BH * d.head());
  attn_pack(dO, dout, d.B, d.T, d.C, d.H, 1, c.s);
  OC_CUDA_CHECK(cudaGetLastError());
  const Op *Q = qkvh, *K = Q + d.BH * d.head(), *V = K + d.BH * d.head();
  const int64_t hs = d.head(), ss = d.scores();
  float* dP = c.scratch.get<float>(Slot::AttnScores, d.BH * ss);
  bgemm(c, d, false, true, d.T, d.T, d.D, 1.0f, dO, d.D, hs, V, d.D, hs, dP, d.Tp, ss, lp);  // dP = dO V^T
  const void *dS = dP, *P = att;
  int64_t ldP = d.T;
  if constexpr (lp) {
    bf16_t* ds = c.scratch.get<bf16_t>(Slot::AttnDS, d.BH * ss);
    bf16_t* pb = c.scratch.get<bf16_t>(Slot::AttnProbs, d.BH * ss);
    attn_softmax_backward(ds, pb, dP, att, d.BH * d.T, d.T, d.Tp, scale_of(d), c.s);
    dS = ds, P = pb, ldP = d.Tp;
  } else {
    attn_softmax_backward(dP, static_cast<float*>(nullptr), dP, att, d.BH * d.T, d.T, d.Tp, scale_of(d), c.s);
  }
  OC_CUDA_CHECK(cudaGetLastError());
  float* G = c.scratch.get<float>(Slot::AttnOut, 3 * d.BH * hs);                             // dQ, dK, dV head-major
  bgemm(c, d, false, false, d.T, d.D, d.T, 1.0f, dS, d.Tp, ss, K, d.D, hs, G, d.D, hs, lp);  // dQ = dS K
  bgemm(c, d, true, false, d.T, d.D, d.T, 1.0f, dS, d.Tp, ss, Q, d.D, hs, G + d.BH * hs, d.D, hs, lp);  // dS^T Q
  bgemm(c, d, true, false, d.T, d.D, d.T, 1.0f, P, ldP, d.T * ldP, dO, d.D, hs, G + 2 * d.BH * hs, d.D, hs,
        lp);  // dV = P^T dO
  attn_unpack(dqkv, G, d.B, d.T, d.C, d.H, 3, c.s);
  OC_CUDA_CHECK(cudaGetLastError());
}

bool bf16_of(Prec p) { return p == Prec::BF16; }

}  // namespace

bool gemm_attention_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("OPENCLIP_CUDA_ATTENTION");
    if (!e || !*e || std::strcmp(e, "kernel") == 0) return false;
    if (std::strcmp(e, "gemm") != 0)
      OC_USER_ERROR("OPENCLIP_CUDA_ATTENTION={}: choose kernel (the default) or gemm", e);
    return true;
  }();
  return on;
}

void attention_gemm_forward(DeviceCtx& c, const AttentionForwardArgs& a) {
  const Dims d = dims(a.B, a.Tn, a.C, a.H);
  if (bf16_of(a.prec))
    forward<bf16_t>(c, a.out, a.att, a.qkv, d, a.causal);
  else
    forward<float>(c, a.out, a.att, a.qkv, d, a.causal);
}
void attention_gemm_backward(DeviceCtx& c, const AttentionBackwardArgs& a) {
  const Dims d = dims(a.B, a.Tn, a.C, a.H);
  if (bf16_of(a.prec))
    backward<bf16_t>(c, a.dqkv, a.dout, a.qkv, a.att, d);
  else
    backward<float>(c, a.dqkv, a.dout, a.qkv, a.att, d);
}
void attention_gemm_forward_bf16(DeviceCtx& c, const AttentionForwardBf16Args& a) {
  forward<bf16_t>(c, reinterpret_cast<bf16_t*>(a.out), a.att, reinterpret_cast<const bf16_t*>(a.qkv),
                  dims(a.B, a.Tn, a.C, a.H), a.causal);
}
void attention_gemm_backward_bf16(DeviceCtx& c, const AttentionBackwardBf16Args& a) {
  backward<bf16_t>(c, a.dqkv, reinterpret_cast<const bf16_t*>(a.dout), reinterpret_cast<const bf16_t*>(a.qkv), a.att,
                   dims(a.B, a.Tn, a.C, a.H));
}

}  // namespace oc::ops::cuda
