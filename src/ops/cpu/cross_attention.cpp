// Cross attention, fused per (batch, head) like the self-attention kernel (attention.cpp,
// whose row softmax it shares): scores by gemm, scaled softmax over all Tk keys, then P @ V.
// The (b, h) pairs are split across threads, each gemm inside runs single-threaded, and every
// pair writes its own rows/columns: deterministic for any thread count.
#include "ops/cpu/cross_attention.h"

#include <cmath>

#include "core/check.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/softmax_row.h"

namespace oc::ops {

namespace {
void check_shape(int64_t B, int64_t Tq, int64_t Tk, int64_t C, int64_t H, int64_t ldq, int64_t ldk, int64_t ldv) {
  OC_CHECK(H > 0 && C % H == 0, "cross attention: width {} not divisible by {} heads", C, H);
  OC_CHECK(B >= 0 && Tq > 0 && Tk > 0, "cross attention: B={} Tq={} Tk={}", B, Tq, Tk);
  OC_CHECK(ldq >= C && ldk >= C && ldv >= C, "cross attention: row strides {} {} {} below the width {}", ldq, ldk, ldv,
           C);
}
}  // namespace

template <typename T>
void cross_attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int64_t ldq, int64_t ldk, int64_t ldv,
                             int64_t B, int64_t Tq, int64_t Tk, int64_t C, int64_t H, Prec prec) {
  check_shape(B, Tq, Tk, C, H, ldq, ldk, ldv);
  const int64_t D = C / H;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    const T* qh = q + b * Tq * ldq + h * D;
    const T* kh = k + b * Tk * ldk + h * D;
    const T* vh = v + b * Tk * ldv + h * D;
    T* P = att + bh * Tq * Tk;
    gemm<T>(false, true, Tq, Tk, D, 1.0f, qh, ldq, kh, ldk, 0.0f, P, Tk, prec);  // raw scores
    for (int64_t i = 0; i < Tq; ++i) cpu::softmax_row(P + i * Tk, Tk, Tk, scale);
    gemm<T>(false, false, Tq, D, Tk, 1.0f, P, Tk, vh, ldv, 0.0f, out + b * Tq * C + h * D, C, prec);
  }
}

template <typename T>
void cross_attention_backward(T* dq, T* dk, T* dv, T* scratch, const T* dout, const T* q, const T* k, const T* v,
                              const T* att, int64_t ldq, int64_t ldk, int64_t ldv, int64_t B, int64_t Tq, int64_t Tk,
                              int64_t C, int64_t H, Prec prec) {
  check_shape(B, Tq, Tk, C, H, ldq, ldk, ldv);
  const int64_t D = C / H;
  const T scale = T(1) / std::sqrt(T(D));
#pragma omp parallel for schedule(static)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    const int64_t oq = b * Tq * ldq + h * D, ok = b * Tk * ldk + h * D, ov = b * Tk * ldv + h * D;
    const T* dO = dout + b * Tq * C + h * D;
    const T* P = att + bh * Tq * Tk;
    T* dS = scratch + bh * Tq * Tk;
    gemm<T>(false, true, Tq, Tk, D, 1.0f, dO, C, v + ov, ldv, 0.0f, dS, Tk, prec);  // dP = dO V^T
    gemm<T>(true, false, Tk, D, Tq, 1.0f, P, Tk, dO, C, 0.0f, dv + ov, ldv, prec);  // dV = P^T dO
    for (int64_t i = 0; i < Tq; ++i) cpu::softmax_backward_row(dS + i * Tk, P + i * Tk, Tk, scale);
    gemm<T>(false, false, Tq, D, Tk, 1.0f, dS, Tk, k + ok, ldk, 0.0f, dq + oq, ldq, prec);  // dQ = dS K
    gemm<T>(true, false, Tk, D, Tq, 1.0f, dS, Tk, q + oq, ldq, 0.0f, dk + ok, ldk, prec);   // dK = dS^T Q
  }
}

#define OC_INSTANTIATE(T)                                                                                              \
  template void cross_attention_forward<T>(T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, int64_t,   \
                                           int64_t, int64_t, int64_t, int64_t, Prec);                                  \
  template void cross_attention_backward<T>(T*, T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int64_t, \
                                            int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, Prec);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const CrossAttentionForwardArgs& a) {
  ops::cross_attention_forward(a.out, a.att, a.q, a.k, a.v, a.ldq, a.ldk, a.ldv, a.B, a.Tq, a.Tk, a.C, a.H, a.prec);
}
void run(const CrossAttentionBackwardArgs& a) {
  ops::cross_attention_backward(a.dq, a.dk, a.dv, a.scratch, a.dout, a.q, a.k, a.v, a.att, a.ldq, a.ldk, a.ldv, a.B,
                                a.Tq, a.Tk, a.C, a.H, a.prec);
}
}  // namespace oc::ops::cpu
