// Reference cross attention, per (batch, head), straight from the definitions:
//   S = q k^T, P = softmax(S / sqrt(D)) over all Tk keys, out = P v;
//   dP = dO v^T, dV = P^T dO, dS = P * (dP - rowsum(dP * P)) / sqrt(D), dQ = dS k, dK = dS^T q.
// Under Prec::BF16 every GEMM operand is rounded to bf16 where it enters its product (q, k,
// v, P; dO, P and dS), the scores, dP and dS are fp32 GEMM outputs, as in attention.cpp.
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

namespace {

// One (batch, head) of the op: its rows as pointers with strides, and the rounding rule.
struct HeadView {
  const float *q, *k, *v;
  int64_t ldq, ldk, ldv, Tq, Tk, D;
  bool bf16;
  double r(double x) const { return bf16 ? double(round_bf16(float(x))) : x; }
  double Q(int64_t i, int64_t d) const { return r(q[i * ldq + d]); }
  double K(int64_t j, int64_t d) const { return r(k[j * ldk + d]); }
  double V(int64_t j, int64_t d) const { return r(v[j * ldv + d]); }
};

HeadView head(const float* q, const float* k, const float* v, int64_t ldq, int64_t ldk, int64_t ldv, int64_t b,
              int64_t h, int64_t Tq, int64_t Tk, int64_t C, int64_t H, Prec prec) {
  OC_CHECK(H > 0 && C % H == 0, "cross attention: width {} not divisible by {} heads", C, H);
  const int64_t D = C / H;
  return {q + b * Tq * ldq + h * D, k + b * Tk * ldk + h * D, v + b * Tk * ldv + h * D, ldq, ldk, ldv, Tq, Tk, D,
          prec == Prec::BF16};
}

// P[Tq,Tk] (fp32 values) and out (row stride C) of one head.
void head_forward(float* out, int64_t ldo, float* P, const HeadView& hv) {
  const double scale = 1.0 / std::sqrt(double(hv.D));
  std::vector<double> s(size_t(hv.Tk));
  for (int64_t i = 0; i < hv.Tq; ++i) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < hv.Tk; ++j) {
      double acc = 0;
      for (int64_t d = 0; d < hv.D; ++d) acc += hv.Q(i, d) * hv.K(j, d);
      s[size_t(j)] = double(float(acc)) * scale;  // the scores are an fp32 GEMM output
      mx = std::isnan(s[size_t(j)]) ? s[size_t(j)] : std::max(mx, s[size_t(j)]);
    }
    double sum = 0;
    for (int64_t j = 0; j < hv.Tk; ++j) sum += std::exp(s[size_t(j)] - mx);
    for (int64_t j = 0; j < hv.Tk; ++j) P[i * hv.Tk + j] = float(std::exp(s[size_t(j)] - mx) / sum);
  }
  for (int64_t i = 0; i < hv.Tq; ++i)
    for (int64_t d = 0; d < hv.D; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < hv.Tk; ++j) acc += hv.r(P[i * hv.Tk + j]) * hv.V(j, d);
      out[i * ldo + d] = float(acc);
    }
}

// dS[Tq,Tk] of one head (rounded where it enters dQ and dK), from dO (row stride ldo) and P.
std::vector<double> head_dscores(const float* dO, int64_t ldo, const float* P, const HeadView& hv) {
  const double scale = 1.0 / std::sqrt(double(hv.D));
  std::vector<double> dS(size_t(hv.Tq * hv.Tk));
  for (int64_t i = 0; i < hv.Tq; ++i) {
    double dot = 0;
    for (int64_t j = 0; j < hv.Tk; ++j) {
      double dp = 0;  // dP = dO v^T, an fp32 GEMM output
      for (int64_t d = 0; d < hv.D; ++d) dp += hv.r(dO[i * ldo + d]) * hv.V(j, d);
      dS[size_t(i * hv.Tk + j)] = double(float(dp));
      dot += dS[size_t(i * hv.Tk + j)] * P[i * hv.Tk + j];
    }
    for (int64_t j = 0; j < hv.Tk; ++j) {
      const double ds = scale * P[i * hv.Tk + j] * (dS[size_t(i * hv.Tk + j)] - dot);
      dS[size_t(i * hv.Tk + j)] = hv.r(double(float(ds)));
    }
  }
  return dS;
}

void head_backward(float* dq, float* dk, float* dv, const float* dO, int64_t ldo, const float* P, const HeadView& hv) {
  const std::vector<double> dS = head_dscores(dO, ldo, P, hv);
  const int64_t Tq = hv.Tq, Tk = hv.Tk;
  for (int64_t i = 0; i < Tq; ++i)
    for (int64_t d = 0; d < hv.D; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < Tk; ++j) acc += dS[size_t(i * Tk + j)] * hv.K(j, d);  // dQ = dS k
      dq[i * hv.ldq + d] = float(acc);
    }
  for (int64_t j = 0; j < Tk; ++j)
    for (int64_t d = 0; d < hv.D; ++d) {
      double ak = 0, av = 0;
      for (int64_t i = 0; i < Tq; ++i) {
        ak += dS[size_t(i * Tk + j)] * hv.Q(i, d);          // dK = dS^T q
        av += hv.r(P[i * Tk + j]) * hv.r(dO[i * ldo + d]);  // dV = P^T dO
      }
      dk[j * hv.ldk + d] = float(ak), dv[j * hv.ldv + d] = float(av);
    }
}

}  // namespace

void run(const CrossAttentionForwardArgs& a) {
  const auto& [out, att, q, k, v, ldq, ldk, ldv, B, Tq, Tk, C, H, prec] = a;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const HeadView hv = head(q, k, v, ldq, ldk, ldv, b, h, Tq, Tk, C, H, prec);
      head_forward(out + b * Tq * C + h * hv.D, C, att + (b * H + h) * Tq * Tk, hv);
    }
}

void run(const CrossAttentionBackwardArgs& a) {
  const auto& [dq, dk, dv, scratch, dout, q, k, v, att, ldq, ldk, ldv, B, Tq, Tk, C, H, prec] = a;  // scratch: unused
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const HeadView hv = head(q, k, v, ldq, ldk, ldv, b, h, Tq, Tk, C, H, prec);
      const int64_t off = h * hv.D;
      head_backward(dq + b * Tq * ldq + off, dk + b * Tk * ldk + off, dv + b * Tk * ldv + off, dout + b * Tq * C + off,
                    C, att + (b * H + h) * Tq * Tk, hv);
    }
}

}  // namespace oc::ops::ref
