// The CUDA backend's composite ops (fused_ops.h): kernel launches and cuBLASLt GEMMs on the
// backend's stream, scratch from its slots. First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/fused_ops.h"

#include "core/check.h"
#include "ops/cuda/attention_gemm.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/kernels_fused.h"

namespace oc::ops::cuda {
namespace {

#define OC_LAUNCHED() OC_CUDA_CHECK(cudaGetLastError())

bf16_t* b16(bf16* p) { return reinterpret_cast<bf16_t*>(p); }
const bf16_t* b16(const bf16* p) { return reinterpret_cast<const bf16_t*>(p); }

void check_heads(int64_t C, int64_t H) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
}

// Row-major C[M,N] (row stride ldc) = alpha * op(A) op(B) + beta * C in fp32 on cuBLASLt.
void gemm(DeviceCtx& c, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  c.lt.run(LtGemm{ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, false, alpha, beta}, c.s);
}

// A copy of the elements a (batched, strided) matrix spans, rounded to bf16 values.
const float* rounded(DeviceCtx& c, Slot slot, const float* x, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                     int64_t stride) {
  if (rows == 0 || cols == 0 || batch == 0) return x;
  const int64_t n = (batch - 1) * stride + (rows - 1) * ld + cols;
  float* r = c.scratch.get<float>(slot, n);
  round_bf16_f32(r, x, n, c.s);
  OC_LAUNCHED();
  return r;
}

}  // namespace

bool attention_fits(const DeviceCtx& c, int64_t T, int64_t C, int64_t H) {
  return H <= 0 || C % H != 0 || attention_smem_bytes(T, C / H) <= c.smem_optin;
}

namespace {

// The strided-row attention kernels (kernels_xattn.cu) on Tq queries over Tk keys.
XAttnShape xattn_shape(const char* op, int64_t ldq, int64_t ldk, int64_t ldv, int64_t B, int64_t Tq, int64_t Tk,
                       int64_t C, int64_t H) {
  OC_CHECK(H > 0 && C % H == 0, "{}: width {} not divisible by {} heads", op, C, H);
  OC_CHECK(B >= 0 && Tq > 0 && Tk > 0, "{}: B={} Tq={} Tk={}", op, B, Tq, Tk);
  OC_CHECK(ldq >= C && ldk >= C && ldv >= C, "{}: row strides {} {} {} below the width {}", op, ldq, ldk, ldv, C);
  OC_CHECK(C / H <= xattn_max_head_dim(), "{}: head width {} above the kernel's {}", op, C / H, xattn_max_head_dim());
  OC_CHECK(B * H * Tq < (int64_t(1) << 31) && Tk < (int64_t(1) << 31), "{}: B*H*Tq = {} rows, Tk = {}: too many", op,
           B * H * Tq, Tk);
  return {ldq, ldk, ldv, B, Tq, Tk, C, H};
}
// Self-attention as Tq = Tk = T rows over the thirds of each qkv row.
XAttnShape self_shape(const char* op, int64_t B, int64_t T, int64_t C, int64_t H) {
  return xattn_shape(op, 3 * C, 3 * C, 3 * C, B, T, T, C, H);
}

// att null (inference, ops/attention.h): the kernels still write P, into the backend's scratch
// (one [B,H,T,T] slot reused by every layer) rather than a buffer of the caller's plan.
template <typename Args>
Args with_probs(DeviceCtx& c, Args a) {
  if (!a.att) a.att = c.scratch.get<float>(Slot::AttentionP, a.B * a.H * a.Tn * a.Tn);
  return a;
}

}  // namespace

// Batched GEMMs (attention_gemm.cpp) with OPENCLIP_CUDA_ATTENTION=gemm; else sequences
// whose K and V fit one block's shared memory: kernels_attention.cu; longer ones (SigLIP at
// 384 px: T = 576, 729): the strided-row kernels, which have no such bound.
void attention_forward(DeviceCtx& c, const AttentionForwardArgs& args) {
  const AttentionForwardArgs a = with_probs(c, args);
  check_heads(a.C, a.H);
  if (gemm_attention_enabled()) return attention_gemm_forward(c, a);
  const bool r16 = a.prec == Prec::BF16;
  if (attention_fits(c, a.Tn, a.C, a.H)) {
    OC_CUDA_CHECK(attention_forward(a.out, a.att, a.qkv, a.B, a.Tn, a.C, a.H, a.causal, r16, c.s));
    return;
  }
  OC_CUDA_CHECK(xattn_forward(a.out, a.att, a.qkv, a.qkv + a.C, a.qkv + 2 * a.C,
                              self_shape("attention_forward", a.B, a.Tn, a.C, a.H), a.causal, r16, c.s));
}
void attention_backward(DeviceCtx& c, const AttentionBackwardArgs& a) {
  check_heads(a.C, a.H);  // dS goes through the caller's scratch (B*H*T*T floats); causal: already in att
  if (gemm_attention_enabled()) return attention_gemm_backward(c, a);
  const bool r16 = a.prec == Prec::BF16;
  if (attention_fits(c, a.Tn, a.C, a.H)) {
    OC_CUDA_CHECK(attention_backward(a.dqkv, a.scratch, a.dout, a.qkv, a.att, a.B, a.Tn, a.C, a.H, r16, c.s));
    return;
  }
  OC_CUDA_CHECK(xattn_backward(a.dqkv, a.dqkv + a.C, a.dqkv + 2 * a.C, a.scratch, a.dout, a.qkv, a.qkv + a.C,
                               a.qkv + 2 * a.C, a.att, self_shape("attention_backward", a.B, a.Tn, a.C, a.H), r16,
                               c.s));
}
void attention_forward_bf16(DeviceCtx& c, const AttentionForwardBf16Args& args) {
  const AttentionForwardBf16Args a = with_probs(c, args);
  check_heads(a.C, a.H);
  if (gemm_attention_enabled()) return attention_gemm_forward_bf16(c, a);
  const bf16_t* qkv = b16(a.qkv);
  if (attention_fits(c, a.Tn, a.C, a.H)) {
    OC_CUDA_CHECK(attention_forward_bf16(b16(a.out), a.att, qkv, a.B, a.Tn, a.C, a.H, a.causal, c.s));
    return;
  }
  OC_CUDA_CHECK(xattn_forward_bf16(b16(a.out), a.att, qkv, qkv + a.C, qkv + 2 * a.C,
                                   self_shape("attention_forward_bf16", a.B, a.Tn, a.C, a.H), a.causal, c.s));
}
void attention_backward_bf16(DeviceCtx& c, const AttentionBackwardBf16Args& a) {
  check_heads(a.C, a.H);
  if (gemm_attention_enabled()) return attention_gemm_backward_bf16(c, a);
  float* dS = c.scratch.get<float>(Slot::AttentionDS, a.B * a.H * a.Tn * a.Tn);
  const bf16_t* qkv = b16(a.qkv);
  if (attention_fits(c, a.Tn, a.C, a.H)) {
    OC_CUDA_CHECK(attention_backward_bf16(a.dqkv, dS, b16(a.dout), qkv, a.att, a.B, a.Tn, a.C, a.H, c.s));
    return;
  }
  OC_CUDA_CHECK(xattn_backward_bf16(a.dqkv, a.dqkv + a.C, a.dqkv + 2 * a.C, dS, b16(a.dout), qkv, qkv + a.C,
                                    qkv + 2 * a.C, a.att, self_shape("attention_backward_bf16", a.B, a.Tn, a.C, a.H),
                                    c.s));
}

void cross_attention_forward(DeviceCtx& c, const CrossAttentionForwardArgs& a) {
  const XAttnShape x = xattn_shape("cross_attention_forward", a.ldq, a.ldk, a.ldv, a.B, a.Tq, a.Tk, a.C, a.H);
  OC_CUDA_CHECK(xattn_forward(a.out, a.att, a.q, a.k, a.v, x, false, a.prec == Prec::BF16, c.s));
}
void cross_attention_backward(DeviceCtx& c, const CrossAttentionBackwardArgs& a) {
  const XAttnShape x = xattn_shape("cross_attention_backward", a.ldq, a.ldk, a.ldv, a.B, a.Tq, a.Tk, a.C, a.H);
  OC_CUDA_CHECK(
      xattn_backward(a.dq, a.dk, a.dv, a.scratch, a.dout, a.q, a.k, a.v, a.att, x, a.prec == Prec::BF16, c.s));
}

// ops/cpu/loss.cpp's order: two logit GEMMs, the row passes, four gradient GEMMs.
double clip_loss(DeviceCtx& c, const ClipLossArgs& a) {
  const int64_t Nl = a.Nl, Na = a.Na, E = a.E;
  OC_CHECK(Nl > 0 && a.label_offset >= 0 && a.label_offset + Nl <= Na,
           "clip_loss: local rows [{}, {}) not inside the {} gathered columns", a.label_offset, a.label_offset + Nl, Na);
  float* Li = a.scratch;            // img rows against all texts
  float* Lt = a.scratch + Nl * Na;  // txt rows against all images
  gemm(c, false, true, Nl, Na, E, 1.0f, a.img, E, a.txt_all, E, 0.0f, Li, Na);
  gemm(c, false, true, Nl, Na, E, 1.0f, a.txt, E, a.img_all, E, 0.0f, Lt, Na);
  double* parts = c.scratch.get<double>(Slot::LossParts, 4 * Nl + 4);
  double* sums = parts + 4 * Nl;
  clip_ce_rows(Li, parts, Nl, Na, a.label_offset, a.scale, c.s);
  OC_LAUNCHED();
  clip_ce_rows(Lt, parts + 2 * Nl, Nl, Na, a.label_offset, a.scale, c.s);
  OC_LAUNCHED();
  sum_parts(sums, parts, Nl, 4, c.s);  // loss_i, dscale_i, loss_t, dscale_t
  OC_LAUNCHED();
  gemm(c, false, false, Nl, E, Na, 1.0f, Li, Na, a.txt_all, E, 0.0f, a.dimg, E);
  gemm(c, false, false, Nl, E, Na, 1.0f, Lt, Na, a.img_all, E, 0.0f, a.dtxt, E);
  if (a.dtxt_all) gemm(c, true, false, Na, E, Nl, 1.0f, Li, Na, a.img, E, 0.0f, a.dtxt_all, E);
  if (a.dimg_all) gemm(c, true, false, Na, E, Nl, 1.0f, Lt, Na, a.txt, E, 0.0f, a.dimg_all, E);
  double h[4];
  OC_CUDA_CHECK(cudaMemcpyAsync(h, sums, sizeof h, cudaMemcpyDeviceToHost, c.s));
  OC_CUDA_CHECK(cudaStreamSynchronize(c.s));
  if (a.dscale_log) *a.dscale_log += float(h[1] + h[3]);
  return h[0] + h[2];
}

// ops/cpu/siglip_loss.cpp's order: the logit GEMM, the row pass, two gradient GEMMs.
double siglip_loss(DeviceCtx& c, const SiglipLossArgs& a) {
  const int64_t B = a.B, M = a.M, E = a.E;
  float* G = c.scratch.get<float>(Slot::LossLogits, B * M);
  gemm(c, false, true, B, M, E, 1.0f, a.img, E, a.txt, E, 0.0f, G, M);
  double* parts = c.scratch.get<double>(Slot::LossParts, 3 * B + 3);
  double* sums = parts + 3 * B;
  siglip_rows(G, parts, B, M, a.scale, a.bias, a.positives, c.s);
  OC_LAUNCHED();
  sum_parts(sums, parts, B, 3, c.s);  // loss, d scale, d bias
  OC_LAUNCHED();
  gemm(c, false, false, B, E, M, 1.0f, G, M, a.txt, E, 1.0f, a.dimg, E);  // dimg += G @ txt
  gemm(c, true, false, M, E, B, 1.0f, G, M, a.img, E, 0.0f, a.dtxt, E);   // dtxt = G^T @ img
  double h[3];
  OC_CUDA_CHECK(cudaMemcpyAsync(h, sums, sizeof h, cudaMemcpyDeviceToHost, c.s));
  OC_CUDA_CHECK(cudaStreamSynchronize(c.s));
  if (a.dscale_log) *a.dscale_log += float(h[1] * double(a.scale));  // d scale / d log(scale) = scale
  if (a.dbias) *a.dbias += float(h[2]);
  return h[0] / double(B);
}

void layernorm_forward_bf16(DeviceCtx& c, const LayerNormForwardBf16Args& a) {
  cuda::layernorm_forward_bf16(b16(a.out), a.mean, a.rstd, a.inp, a.weight, a.bias, a.N, a.C, a.eps, c.s);
  OC_LAUNCHED();
}
void add_layernorm_forward_bf16(DeviceCtx& c, const AddLayerNormForwardBf16Args& a) {
  cuda::add_layernorm_forward_bf16(a.xm, b16(a.out), a.mean, a.rstd, a.x, a.weight, a.bias, a.N, a.C, a.eps, c.s);
  OC_LAUNCHED();
}
void act_forward_bf16(DeviceCtx& c, const ActForwardBf16Args& a) {
  cuda::act_forward_bf16(b16(a.out), a.inp, a.n, int(a.act), c.s);
  OC_LAUNCHED();
}
void act_backward_bf16(DeviceCtx& c, const ActBackwardBf16Args& a) {
  double* partial = a.dbias ? c.scratch.get<double>(Slot::ColumnParts, kColChunks * a.N) : nullptr;
  column_pass_bf16(1, b16(a.dinp), nullptr, a.dbias, partial, a.dout, a.inp, a.M, a.N, int(a.act), c.s);
  OC_LAUNCHED();
}
void act_value_grad_bf16(DeviceCtx& c, const ActValueGradBf16Args& a) {
  double* partial = a.dbias ? c.scratch.get<double>(Slot::ColumnParts, kColChunks * a.N) : nullptr;
  column_pass_bf16(2, b16(a.dh16), b16(a.act16), a.dbias, partial, a.dact, a.h, a.M, a.N, int(a.act), c.s);
  OC_LAUNCHED();
}
void bias_grad_to_bf16(DeviceCtx& c, const BiasGradToBf16Args& a) {
  double* partial = a.dbias ? c.scratch.get<double>(Slot::ColumnParts, kColChunks * a.N) : nullptr;
  column_pass_bf16(0, b16(a.out), nullptr, a.dbias, partial, a.dout, nullptr, a.M, a.N, 0, c.s);
  OC_LAUNCHED();
}

void gemm_batched(DeviceCtx& c, const GemmBatchedArgs& a) {
  const float *A = a.A, *B = a.B;
  if (a.prec == Prec::BF16) {
    A = rounded(c, Slot::RoundA, A, a.ta ? a.K : a.M, a.ta ? a.M : a.K, a.lda, a.batch, a.stride_a);
    B = rounded(c, Slot::RoundB, B, a.tb ? a.N : a.K, a.tb ? a.K : a.N, a.ldb, a.batch, a.stride_b);
  }
  c.lt.run(LtGemm{a.ta, a.tb, a.M, a.N, a.K, A, a.lda, a.stride_a, B, a.ldb, a.stride_b, a.C, a.ldc, a.stride_c,
                  a.batch, false, a.alpha, a.beta},
           c.s);
}

void linear_forward(DeviceCtx& c, const LinearForwardArgs& a) {
  const float *inp = a.inp, *w = a.weight;
  if (a.prec == Prec::BF16) {
    inp = rounded(c, Slot::RoundA, inp, a.M, a.K, a.K, 1, 0);
    w = rounded(c, Slot::RoundB, w, a.N, a.K, a.K, 1, 0);
  }
  LtGemm g{false, true, a.M, a.N, a.K, inp, a.K, 0, w, a.K, 0, a.out, a.N, 0};
  g.bias = a.bias;  // cuBLASLt bias epilogue
  c.lt.run(g, c.s);
}

}  // namespace oc::ops::cuda
