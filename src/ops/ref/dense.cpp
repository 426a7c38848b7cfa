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

void run(const GemmArgs& a) {
  const auto& [ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, prec] = a;
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

void run(const GemmBatchedArgs& a) {
  const auto& [batch, ta, tb, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, prec] = a;
  for (int64_t b = 0; b < batch; ++b)
    run(GemmArgs{.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = alpha, .A = A + b * stride_a, .lda = lda,
                 .B = B + b * stride_b, .ldb = ldb, .beta = beta, .C = C + b * stride_c, .ldc = ldc, .prec = prec});
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

void run(const LinearForwardArgs& a) {
  const auto& [out, inp, weight, bias, M, K, N, prec] = a;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = bias ? double(bias[j]) : 0.0;
      for (int64_t k = 0; k < K; ++k) acc += operand(inp[i * K + k], prec) * operand(weight[j * K + k], prec);
      out[i * N + j] = float(acc);
    }
}

void run(const LinearBackwardArgs& a) {
  const auto& [dinp, dweight, dbias, dout, inp, weight, M, K, N, prec] = a;
  if (dinp)
    run(GemmArgs{.ta = false, .tb = false, .M = M, .N = K, .K = N, .alpha = 1.0f, .A = dout, .lda = N, .B = weight,
                 .ldb = K, .beta = 0.0f, .C = dinp, .ldc = K, .prec = prec});  // dout @ W
  if (dweight)
    run(GemmArgs{.ta = true, .tb = false, .M = N, .N = K, .K = M, .alpha = 1.0f, .A = dout, .lda = N, .B = inp,
                 .ldb = K, .beta = 1.0f, .C = dweight, .ldc = K, .prec = prec});  // += dout^T @ inp
  if (dbias) add_column_sums(dbias, dout, M, N);
}

void run(const ProjForwardArgs& a) {
  const auto& [out, inp, w, M, K, N, prec] = a;
  run(GemmArgs{.ta = false, .tb = false, .M = M, .N = N, .K = K, .alpha = 1.0f, .A = inp, .lda = K, .B = w, .ldb = N,
               .beta = 0.0f, .C = out, .ldc = N, .prec = prec});
}

void run(const ProjBackwardArgs& a) {
  const auto& [dinp, dw, dout, inp, w, M, K, N, prec] = a;
  if (dinp)
    run(GemmArgs{.ta = false, .tb = true, .M = M, .N = K, .K = N, .alpha = 1.0f, .A = dout, .lda = N, .B = w, .ldb = N,
                 .beta = 0.0f, .C = dinp, .ldc = K, .prec = prec});  // dout @ w^T
  if (dw)
    run(GemmArgs{.ta = true, .tb = false, .M = K, .N = N, .K = M, .alpha = 1.0f, .A = inp, .lda = K, .B = dout,
                 .ldb = N, .beta = 1.0f, .C = dw, .ldc = N, .prec = prec});  // += inp^T @ dout
}

void run(const LayerNormForwardArgs& a) {
  const auto& [out, mean, rstd, inp, weight, bias, N, C, eps] = a;
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

void run(const LayerNormBackwardArgs& a) {
  const auto& [dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C] = a;
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
  switch (act) {
    case Act::Gelu:
      return x * 0.5 * std::erfc(-x / std::sqrt(2.0));  // x * Phi(x)
    case Act::QuickGelu:
      return x / (1.0 + std::exp(-1.702 * x));  // x * sigmoid(1.702 x)
    case Act::GeluTanh: {                       // as torch: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3)
      const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1.0 + std::tanh(u));
    }
  }
  OC_FAIL("unknown activation {}", int(act));
}

double act_derivative(double x, Act act) {
  switch (act) {
    case Act::Gelu:
      return 0.5 * std::erfc(-x / std::sqrt(2.0)) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    case Act::QuickGelu: {
      const double s = 1.0 / (1.0 + std::exp(-1.702 * x));
      return s + 1.702 * x * s * (1.0 - s);
    }
    case Act::GeluTanh: {
      const double k = std::sqrt(2.0 / M_PI), t = std::tanh(k * (x + 0.044715 * x * x * x));
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3 * 0.044715 * x * x);
    }
  }
  OC_FAIL("unknown activation {}", int(act));
}

void run(const ActForwardArgs& a) {
  const auto& [out, inp, n, act] = a;
  for (int64_t i = 0; i < n; ++i) out[i] = float(act_value(inp[i], act));
}

void run(const ActBackwardArgs& a) {
  const auto& [dinp, dout, inp, n, act] = a;
  for (int64_t i = 0; i < n; ++i) dinp[i] = float(double(dout[i]) * act_derivative(inp[i], act));
}

void run(const ReluForwardArgs& a) {
  const auto& [out, inp, n] = a;
  for (int64_t i = 0; i < n; ++i) out[i] = inp[i] < 0.0f ? 0.0f : inp[i];  // NaN < 0 is false: NaN kept
}

void run(const ReluBackwardArgs& a) {
  const auto& [dinp, dout, out, n] = a;
  for (int64_t i = 0; i < n; ++i) dinp[i] = out[i] <= 0.0f ? 0.0f : dout[i];
}

void run(const AddInplaceArgs& a) {
  const auto& [y, x, n] = a;
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace oc::ops::ref
