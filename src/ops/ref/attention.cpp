// Reference self-attention, per (batch, head), straight from the definitions:
//   S = q k^T, P = softmax(S / sqrt(D)) over the unmasked keys (masked: P = 0), out = P v;
//   dP = dO v^T, dV = P^T dO, dS = P * (dP - rowsum(dP * P)) / sqrt(D), dQ = dS k, dK = dS^T q.
// Under Prec::BF16 (and in the *_bf16 kernels) every GEMM operand is rounded to bf16 where it
// enters its product: q, k, v, dO, P and dS.
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

namespace {

// One head's q, k, v (and dO) as wide [T, D] matrices.
struct Head {
  int64_t T, D;
  std::vector<double> q, k, v;
};

double rnd(double x, bool bf16_operands) { return bf16_operands ? double(round_bf16(float(x))) : x; }

// P[i, :] (fp32 values) from the head's q, k.
void softmax_probs(float* P, const Head& h, bool causal, bool bf16_operands) {
  const double scale = 1.0 / std::sqrt(double(h.D));
  std::vector<double> s(size_t(h.T));
  for (int64_t i = 0; i < h.T; ++i) {
    const int64_t n = causal ? i + 1 : h.T;
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t d = 0; d < h.D; ++d)
        acc += rnd(h.q[size_t(i * h.D + d)], bf16_operands) * rnd(h.k[size_t(j * h.D + d)], bf16_operands);
      s[size_t(j)] = double(float(acc)) * scale;  // the scores are an fp32 GEMM output
      mx = std::isnan(s[size_t(j)]) ? s[size_t(j)] : std::max(mx, s[size_t(j)]);
    }
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(s[size_t(j)] - mx);
    for (int64_t j = 0; j < h.T; ++j) P[i * h.T + j] = j < n ? float(std::exp(s[size_t(j)] - mx) / sum) : 0.0f;
  }
}

// out[i, d] = sum_j P[i,j] v[j,d], written with row stride ld.
template <typename Out>
void probs_times_v(Out* out, int64_t ld, const float* P, const Head& h, bool bf16_operands) {
  for (int64_t i = 0; i < h.T; ++i)
    for (int64_t d = 0; d < h.D; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < h.T; ++j)
        acc += rnd(P[i * h.T + j], bf16_operands) * rnd(h.v[size_t(j * h.D + d)], bf16_operands);
      if constexpr (std::is_same_v<Out, bf16>)
        out[i * ld + d] = to_bf16(float(acc));
      else
        out[i * ld + d] = float(acc);
    }
}

// dq, dk, dv (row stride 3C) of one head from dO [T, D] and P.
void head_backward(float* dq, float* dk, float* dv, int64_t ld, const std::vector<double>& dO, const float* P,
                   const Head& h, bool bf16_operands) {
  const int64_t T = h.T, D = h.D;
  const double scale = 1.0 / std::sqrt(double(D));
  auto r = [&](double x) { return rnd(x, bf16_operands); };
  std::vector<double> dS(size_t(T * T));
  for (int64_t i = 0; i < T; ++i) {
    double dot = 0;
    for (int64_t j = 0; j < T; ++j) {
      double dp = 0;  // dP = dO v^T, an fp32 GEMM output
      for (int64_t d = 0; d < D; ++d) dp += r(dO[size_t(i * D + d)]) * r(h.v[size_t(j * D + d)]);
      dS[size_t(i * T + j)] = double(float(dp));
      dot += dS[size_t(i * T + j)] * P[i * T + j];
    }
    for (int64_t j = 0; j < T; ++j) {
      const double ds = scale * P[i * T + j] * (dS[size_t(i * T + j)] - dot);
      dS[size_t(i * T + j)] = r(double(float(ds)));  // fp32 dS, rounded where it enters dQ and dK
    }
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t d = 0; d < D; ++d) {
      double aq = 0, ak = 0, av = 0;
      for (int64_t j = 0; j < T; ++j) {
        aq += dS[size_t(t * T + j)] * r(h.k[size_t(j * D + d)]);  // dQ = dS k
        ak += dS[size_t(j * T + t)] * r(h.q[size_t(j * D + d)]);  // dK = dS^T q
        av += r(P[j * T + t]) * r(dO[size_t(j * D + d)]);         // dV = P^T dO
      }
      dq[t * ld + d] = float(aq), dk[t * ld + d] = float(ak), dv[t * ld + d] = float(av);
    }
}

template <typename In>
double wide(In x) {
  if constexpr (std::is_same_v<In, bf16>)
    return double(to_f32(x));
  else
    return double(x);
}

// The head (b, h) of qkv[B,T,3C] as wide matrices.
template <typename In>
Head load_head(const In* qkv, int64_t b, int64_t hd, int64_t Tn, int64_t C, int64_t H) {
  const int64_t D = C / H, C3 = 3 * C;
  Head h{Tn, D, std::vector<double>(size_t(Tn * D)), std::vector<double>(size_t(Tn * D)),
         std::vector<double>(size_t(Tn * D))};
  for (int64_t t = 0; t < Tn; ++t)
    for (int64_t d = 0; d < D; ++d) {
      const In* row = qkv + (b * Tn + t) * C3 + hd * D + d;
      h.q[size_t(t * D + d)] = wide(row[0]);
      h.k[size_t(t * D + d)] = wide(row[C]);
      h.v[size_t(t * D + d)] = wide(row[2 * C]);
    }
  return h;
}

template <typename In>
std::vector<double> load_dout(const In* dout, int64_t b, int64_t hd, int64_t Tn, int64_t C, int64_t D) {
  std::vector<double> d(size_t(Tn * D));
  for (int64_t t = 0; t < Tn; ++t)
    for (int64_t j = 0; j < D; ++j) d[size_t(t * D + j)] = wide(dout[(b * Tn + t) * C + hd * D + j]);
  return d;
}

void check_heads(int64_t C, int64_t H) {
  OC_CHECK(H > 0 && C % H == 0, "attention: width {} not divisible by {} heads", C, H);
}

// One loop over (batch, head) for the fp32 and the bf16 entry points; bf16: every matmul
// operand rounded to bf16 (the amp_bf16 rule).
template <typename In, typename Out>
void forward_heads(Out* out, float* att, const In* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H, bool causal,
                   bool bf16) {
  check_heads(C, H);
  std::vector<float> own(att ? 0 : size_t(Tn * Tn));  // att null (inference): P not kept
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hd = 0; hd < H; ++hd) {
      const Head h = load_head(qkv, b, hd, Tn, C, H);
      float* P = att ? att + (b * H + hd) * Tn * Tn : own.data();
      softmax_probs(P, h, causal, bf16);
      probs_times_v(out + b * Tn * C + hd * h.D, C, P, h, bf16);
    }
}

template <typename In>
void backward_heads(float* dqkv, const In* dout, const In* qkv, const float* att, int64_t B, int64_t Tn, int64_t C,
                    int64_t H, bool bf16) {
  check_heads(C, H);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t hd = 0; hd < H; ++hd) {
      const Head h = load_head(qkv, b, hd, Tn, C, H);
      float* dq = dqkv + b * Tn * 3 * C + hd * h.D;
      head_backward(dq, dq + C, dq + 2 * C, 3 * C, load_dout(dout, b, hd, Tn, C, h.D), att + (b * H + hd) * Tn * Tn, h,
                    bf16);
    }
}

}  // namespace

void run(const AttentionForwardArgs& a) {
  const auto& [out, att, qkv, B, Tn, C, H, causal, prec] = a;
  forward_heads(out, att, qkv, B, Tn, C, H, causal, prec == Prec::BF16);
}

void run(const AttentionBackwardArgs& a) {
  const auto& [dqkv, scratch, dout, qkv, att, B, Tn, C, H, causal, prec] =
      a;  // scratch: not needed here; causal: in att
  backward_heads(dqkv, dout, qkv, att, B, Tn, C, H, prec == Prec::BF16);
}

void run(const AttentionForwardBf16Args& a) {
  const auto& [out, att, qkv, B, Tn, C, H, causal] = a;
  forward_heads(out, att, qkv, B, Tn, C, H, causal, true);
}

void run(const AttentionBackwardBf16Args& a) {
  const auto& [dqkv, dout, qkv, att, B, Tn, C, H] = a;
  backward_heads(dqkv, dout, qkv, att, B, Tn, C, H, true);
}

}  // namespace oc::ops::ref
