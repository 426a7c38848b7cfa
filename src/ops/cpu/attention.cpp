// Self-attention core, fused per (batch, head): scores by gemm, scaled softmax (masked
// entries are exactly 0 and never exponentiated), then P @ V. The (b, h) pairs are split
// across threads; each gemm inside runs single-threaded (oneDNN sees the parallel region),
// and every pair writes its own rows/columns, so there is nothing to reduce.
// att null (inference: no backward reads the probabilities): each pair's [T,T] block lives in
// the computing thread's scratch (Scratch::Attn), in cache, and no [B,H,T,T] buffer exists;
// the arithmetic is the same, so the outputs are bitwise those with att given.
#include "ops/cpu/attention.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

#include "core/check.h"
#include "ops/cpu/attention_internal.h"
#include "ops/cpu/bf16_convert.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/gemm_int8.h"
#include "ops/cpu/quantize_static.h"
#include "ops/cpu/scratch.h"
#include "ops/cpu/softmax_row.h"
#include "ops/cpu/vec_math.h"

namespace oc::ops {

using cpu::softmax_backward_row;
using cpu::softmax_row;

template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H, bool causal,
                       Prec prec) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
  const int64_t D = C / H, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    const T* q = qkv + b * Tn * C3 + h * D;
    const T* k = q + C;
    const T* v = q + 2 * C;
    T* P = att ? att + bh * Tn * Tn : cpu::thread_scratch<T>(cpu::Scratch::Attn, size_t(Tn * Tn));
    gemm<T>(false, true, Tn, Tn, D, 1.0f, q, C3, k, C3, 0.0f, P, Tn, prec);  // raw scores
    for (int64_t i = 0; i < Tn; ++i) softmax_row(P + i * Tn, causal ? i + 1 : Tn, Tn, scale);
    gemm<T>(false, false, Tn, D, Tn, 1.0f, P, Tn, v, C3, 0.0f, out + b * Tn * C + h * D, C, prec);
  }
}

template <typename T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int64_t B, int64_t Tn,
                        int64_t C, int64_t H, bool causal, Prec prec) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
  const int64_t D = C / H, C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    const T* q = qkv + b * Tn * C3 + h * D;
    const T* k = q + C;
    const T* v = q + 2 * C;
    T* dq = dqkv + b * Tn * C3 + h * D;
    T* dk = dq + C;
    T* dv = dq + 2 * C;
    const T* dO = dout + b * Tn * C + h * D;
    const T* P = att + bh * Tn * Tn;
    T* dS = scratch + bh * Tn * Tn;
    gemm<T>(false, true, Tn, Tn, D, 1.0f, dO, C, v, C3, 0.0f, dS, Tn, prec);   // dP = dO V^T
    gemm<T>(true, false, Tn, D, Tn, 1.0f, P, Tn, dO, C, 0.0f, dv, C3, prec);   // dV = P^T dO
    for (int64_t i = 0; i < Tn; ++i) softmax_backward_row(dS + i * Tn, P + i * Tn, Tn, scale);
    gemm<T>(false, false, Tn, D, Tn, 1.0f, dS, Tn, k, C3, 0.0f, dq, C3, prec);  // dQ = dS K
    gemm<T>(true, false, Tn, D, Tn, 1.0f, dS, Tn, q, C3, 0.0f, dk, C3, prec);   // dK = dS^T Q
  }
  (void)causal;  // the mask lives in att (zeros), nothing else to do
}

namespace {

// Single-threaded fp32 GEMM on contiguous blocks (called inside the (b, h) parallel loop).
void sgemm1(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B,
            int64_t ldb, float* C, int64_t ldc) {
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
  OC_CHECK(st == dnnl_success, "dnnl_sgemm failed (status {}) for M={} N={} K={}", int(st), M, N, K);
}

// dst[Tn,D] (contiguous fp32) = the head's columns of a bf16 [Tn, ld] block.
void widen_head(float* dst, const bf16* src, int64_t Tn, int64_t D, int64_t ld) {
  for (int64_t t = 0; t < Tn; ++t) cpu::widen_row(dst + t * D, src + t * ld, D);
}

// The fallback (CPUs without AVX-512, and tests): per (b, h), q, k, v widened to fp32
// (exact) in thread scratch, fp32 sgemm on them, so the products are those of bf16 operands
// with fp32 accumulation. Widening a 50x64 head costs less than a oneDNN primitive execution.
// q8: the output as int8 rows (AttentionInt8Args) instead of bf16 into out.
void attention_forward_bf16_sgemm(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                                  bool causal, const Int8Out* q8 = nullptr) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
  const int64_t D = C / H, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    float* s = cpu::thread_scratch<float>(cpu::Scratch::Attn, size_t(4 * Tn * D + (att ? 1 : 2) * Tn * Tn));
    float *q = s, *k = q + Tn * D, *v = k + Tn * D, *o = v + Tn * D, *pr = o + Tn * D;
    const bf16* qs = qkv + b * Tn * C3 + h * D;
    widen_head(q, qs, Tn, D, C3);
    widen_head(k, qs + C, Tn, D, C3);
    widen_head(v, qs + 2 * C, Tn, D, C3);
    float* P = att ? att + bh * Tn * Tn : pr + Tn * Tn;  // att null: in this thread's scratch
    sgemm1(false, true, Tn, Tn, D, q, D, k, D, P, Tn);  // raw scores
    for (int64_t i = 0; i < Tn; ++i) softmax_row(P + i * Tn, causal ? i + 1 : Tn, Tn, scale);
    cpu::round_row(pr, P, Tn * Tn);
    sgemm1(false, false, Tn, D, Tn, pr, Tn, v, D, o, D);
    for (int64_t t = 0; t < Tn; ++t) {
      const int64_t row = b * Tn + t;
      if (!q8)
        cpu::to_bf16_row(out + row * C + h * D, o + t * D, D);
      else if (!cpu::quantize_static(o + t * D, D, q8->q + row * C + h * D, 1.0f / q8->scale_in))
        cpu::mark_row_nan(q8->scale + row);
    }
  }
}

void attention_backward_bf16_sgemm(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B,
                                   int64_t Tn, int64_t C, int64_t H) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
  const int64_t D = C / H, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(float(D));
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    float* s = cpu::thread_scratch<float>(cpu::Scratch::Attn, size_t(4 * Tn * D + 2 * Tn * Tn));
    float *q = s, *k = q + Tn * D, *v = k + Tn * D, *dO = v + Tn * D, *pr = dO + Tn * D, *dS = pr + Tn * Tn;
    const bf16* qs = qkv + b * Tn * C3 + h * D;
    widen_head(q, qs, Tn, D, C3);
    widen_head(k, qs + C, Tn, D, C3);
    widen_head(v, qs + 2 * C, Tn, D, C3);
    widen_head(dO, dout + b * Tn * C + h * D, Tn, D, C);
    const float* P = att + bh * Tn * Tn;
    float* dq = dqkv + b * Tn * C3 + h * D;
    float* dk = dq + C;
    float* dv = dq + 2 * C;
    sgemm1(false, true, Tn, Tn, D, dO, D, v, D, dS, Tn);  // dP = dO V^T
    cpu::round_row(pr, P, Tn * Tn);
    sgemm1(true, false, Tn, D, Tn, pr, Tn, dO, D, dv, C3);  // dV = P^T dO
    // dS in fp32, then rounded: it feeds dQ and dK.
    for (int64_t i = 0; i < Tn; ++i) {
      softmax_backward_row(dS + i * Tn, P + i * Tn, Tn, scale);
      cpu::round_row(dS + i * Tn, dS + i * Tn, Tn);
    }
    sgemm1(false, false, Tn, D, Tn, dS, Tn, k, D, dq, C3);  // dQ = dS K
    sgemm1(true, false, Tn, D, Tn, dS, Tn, q, D, dk, C3);   // dK = dS^T Q
  }
}

enum class Kernel { Sgemm, Avx512, Amx };
bool g_force_sgemm = false, g_no_amx = false;

// The best kernel the CPU has, capped by OPENCLIP_ATTENTION=auto|amx|avx512|sgemm (A/B
// measurements; asking for one the CPU lacks gives the best it has).
Kernel kernel() {
  static const Kernel best = [] {
    const char* env = std::getenv("OPENCLIP_ATTENTION");
    const std::string want = env && *env ? env : "auto";
    OC_CHECK(want == "auto" || want == "amx" || want == "avx512" || want == "sgemm",
             "OPENCLIP_ATTENTION={}: expected auto, amx, avx512 or sgemm", want);
    if (want == "sgemm" || !cpu::attention_avx512_supported()) return Kernel::Sgemm;
    return want != "avx512" && cpu::attention_amx_supported() ? Kernel::Amx : Kernel::Avx512;
  }();
  if (g_force_sgemm || best == Kernel::Sgemm) return Kernel::Sgemm;
  return best == Kernel::Amx && !g_no_amx ? Kernel::Amx : Kernel::Avx512;
}

// The forward of every (b, h) pair on the AVX-512 or AMX kernel (q8: int8 rows out).
void forward_heads(Kernel k, bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                   bool causal, const Int8Out* q8) {
  if (k == Kernel::Amx) {
#pragma omp parallel
    {
      const cpu::AmxTiles tiles;  // this thread's tile configuration, for the loop's heads
#pragma omp for schedule(static)
      for (int64_t bh = 0; bh < B * H; ++bh)
        cpu::attention_head_forward_amx(out, att, qkv, bh / H, bh % H, Tn, C, H, causal, q8);
    }
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh)
    cpu::attention_head_forward_avx512(out, att, qkv, bh / H, bh % H, Tn, C, H, causal, q8);
}

}  // namespace

const char* cpu::attention_bf16_kernel() {
  switch (kernel()) {
    case Kernel::Amx: return "amx";
    case Kernel::Avx512: return "avx512";
    case Kernel::Sgemm: break;
  }
  return "sgemm";
}
void cpu::set_attention_bf16_fallback(bool on) { g_force_sgemm = on; }
void cpu::set_attention_bf16_amx(bool on) { g_no_amx = !on; }

// Each (b, h) pair writes its own rows/columns and runs single-threaded: deterministic for
// any thread count, and the forward is bitwise the same when backward recomputes it. The
// backward has no AMX kernel (the AVX-512 one reads the forward's fp32 probabilities).
void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                            bool causal) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
  const Kernel k = kernel();
  if (k == Kernel::Sgemm) return attention_forward_bf16_sgemm(out, att, qkv, B, Tn, C, H, causal);
  forward_heads(k, out, att, qkv, B, Tn, C, H, causal, nullptr);
}

void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B, int64_t Tn,
                             int64_t C, int64_t H) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
  if (kernel() == Kernel::Sgemm) return attention_backward_bf16_sgemm(dqkv, dout, qkv, att, B, Tn, C, H);
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh)
    cpu::attention_head_backward_avx512(dqkv, dout, qkv, att, bh / H, bh % H, Tn, C, H);
}

#define OC_INSTANTIATE(T)                                                                                      \
  template void attention_forward<T>(T*, T*, const T*, int64_t, int64_t, int64_t, int64_t, bool, Prec);        \
  template void attention_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t, \
                                      bool, Prec);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const AttentionForwardArgs& a) {
  ops::attention_forward(a.out, a.att, a.qkv, a.B, a.Tn, a.C, a.H, a.causal, a.prec);
}
void run(const AttentionBackwardArgs& a) {
  ops::attention_backward(a.dqkv, a.scratch, a.dout, a.qkv, a.att, a.B, a.Tn, a.C, a.H, a.causal, a.prec);
}
void run(const AttentionForwardBf16Args& a) {
  ops::attention_forward_bf16(a.out, a.att, a.qkv, a.B, a.Tn, a.C, a.H, a.causal);
}
void run(const AttentionBackwardBf16Args& a) {
  ops::attention_backward_bf16(a.dqkv, a.dout, a.qkv, a.att, a.B, a.Tn, a.C, a.H);
}
// Every row's scale set first; a head that meets a non-finite value marks its row NaN.
void attention_int8(const AttentionInt8Args& a) {
  OC_CHECK(a.H > 0 && a.C % a.H == 0 && a.out.scale_in > 0.0f, "attention_int8: width {}, {} heads, scale {}", a.C, a.H,
           a.out.scale_in);
  std::fill(a.out.scale, a.out.scale + a.B * a.Tn, a.out.scale_in);
  const Kernel k = kernel();
  if (k == Kernel::Sgemm) return attention_forward_bf16_sgemm(nullptr, a.att, a.qkv, a.B, a.Tn, a.C, a.H, a.causal, &a.out);
  forward_heads(k, nullptr, a.att, a.qkv, a.B, a.Tn, a.C, a.H, a.causal, &a.out);
}

}  // namespace oc::ops::cpu
