// Reference GEMM, linear/projection layers, LayerNorm, activations and the residual add.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

namespace {
// A GEMM operand as the op sees it: under Prec::BF16 rounded to its bf16 value.
double operand(float x, Prec prec) { return prec == Prec::BF16 ? double(round_bf16(x)) : double(x); }
}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
          int64_t ldb, float beta, float* C, int64_t ldc, Prec prec) {
  OC_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm: negative size M={} N={} K={}", M, N, K);
  OC_CHECK(lda >= std::max<int64_t>(1, ta ? M : K) && ldb >= std::max<int64_t>(1, tb ? K : N) &&
               ldc >= std::max<int64_t>(1, N),
           "gemm: leading dimensions lda={} ldb={} ldc={} too small for M={} N={} K={}", lda, ldb, ldc, M, N, K);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        const float a = ta ? A[k * lda + i] : A[i * lda + k];
        const float b = tb ? B[j * ldb + k] : B[k * ldb + j];
        acc += operand(a, prec) * operand(b, prec);
      }
      float& c = C[i * ldc + j];
      // beta == 0 never reads C (BLAS semantics: C may hold garbage, NaN included).
      c = float(double(alpha) * acc + (beta == 0.0f ? 0.0 : double(beta) * double(c)));
    }
}

void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                  int64_t ldc, int64_t stride_c, Prec prec) {
  for (int64_t b = 0; b < batch; ++b)
    gemm(ta, tb, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta, C + b * stride_c, ldc, prec);
}

namespace {
// dbias[N] += column sums of d[M,N].
void add_column_sums(float* dbias, const float* d, int64_t M, int64_t N) {
  for (int64_t j = 0; j < N; ++j) {
    double s = 0;
    for (int64_t i = 0; i < M; ++i) s += d[i * N + j];
    dbias[j] = float(double(dbias[j]) + s);
  }
}
}  // namespace

void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                    int64_t N, Prec prec) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = bias ? double(bias[j]) : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += operand(inp[i * K + k], prec) * operand(weight[j * K + k], prec);
      out[i * N + j] = float(acc);
    }
}

void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t M, int64_t K, int64_t N, Prec prec) {
  if (dinp) gemm(false, false, M, K, N, 1.0f, dout, N, weight, K, 0.0f, dinp, K, prec);    // dout @ W
  if (dweight) gemm(true, false, N, K, M, 1.0f, dout, N, inp, K, 1.0f, dweight, K, prec);  // += dout^T @ inp
  if (dbias) add_column_sums(dbias, dout, M, N);
}

void proj_forward(float* out, const float* inp, const float* w, int64_t M, int64_t K, int64_t N, Prec prec) {
  gemm(false, false, M, N, K, 1.0f, inp, K, w, N, 0.0f, out, N, prec);
}

void proj_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int64_t M, int64_t K,
                   int64_t N, Prec prec) {
  if (dinp) gemm(false, true, M, K, N, 1.0f, dout, N, w, N, 0.0f, dinp, K, prec);  // dout @ w^T
  if (dw) gemm(true, false, K, N, M, 1.0f, inp, K, dout, N, 1.0f, dw, N, prec);    // += inp^T @ dout
}

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int64_t N, int64_t C, double eps) {
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    double m = 0;
    for (int64_t c = 0; c < C; ++c) m += x[c];
    m /= double(C);
    double var = 0;  // biased, as torch
    for (int64_t c = 0; c < C; ++c) var += (x[c] - m) * (x[c] - m);
    var /= double(C);
    const double rs = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < C; ++c) out[i * C + c] = float((x[c] - m) * rs * weight[c] + bias[c]);
    mean[i] = float(m);
    rstd[i] = float(rs);
  }
}

void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C) {
  std::vector<double> dw(size_t(C), 0.0), db(size_t(C), 0.0);
  for (int64_t i = 0; i < N; ++i) {
    const float* x = inp + i * C;
    const float* dy = dout + i * C;
    const double m = mean[i], rs = rstd[i];
    // dnorm = dy * w;  dx = rs * (dnorm - mean(dnorm) - norm * mean(dnorm * norm))
    double mean_dn = 0, mean_dn_n = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double n = (x[c] - m) * rs, dn = double(dy[c]) * weight[c];
      mean_dn += dn;
      mean_dn_n += dn * n;
    }
    mean_dn /= double(C);
    mean_dn_n /= double(C);
    for (int64_t c = 0; c < C; ++c) {
      const double n = (x[c] - m) * rs;
      dinp[i * C + c] = float(dinp[i * C + c] + rs * (double(dy[c]) * weight[c] - mean_dn - n * mean_dn_n));
      dw[size_t(c)] += dy[c] * n;
      db[size_t(c)] += dy[c];
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    dweight[c] = float(dweight[c] + dw[size_t(c)]);
    dbias[c] = float(dbias[c] + db[size_t(c)]);
  }
}

double act_value(double x, Act act) {
  if (act == Act::Gelu) return x * 0.5 * std::erfc(-x / std::sqrt(2.0));  // x * Phi(x)
  return x / (1.0 + std::exp(-1.702 * x));                                // x * sigmoid(1.702 x)
}

double act_derivative(double x, Act act) {
  if (act == Act::Gelu) return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  const double s = 1.0 / (1.0 + std::exp(-1.702 * x));
  return s + 1.702 * x * s * (1.0 - s);
}

void act_forward(float* out, const float* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) out[i] = float(act_value(inp[i], act));
}

void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) dinp[i] = float(double(dout[i]) * act_derivative(inp[i], act));
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace oc::ops::ref
