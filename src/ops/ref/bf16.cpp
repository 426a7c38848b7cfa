// Reference amp_bf16 kernels: the fp32 (here: double) computation of the unfused ops, with
// exactly the stored GEMM operands rounded to bf16.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

namespace {

// acc = op(A) @ op(B) at (i, j) over exact bf16 values.
double dot_bf16(bool ta, bool tb, int64_t i, int64_t j, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                int64_t ldb) {
  double acc = 0;
  for (int64_t k = 0; k < K; ++k)
    acc += double(to_f32(ta ? A[k * lda + i] : A[i * lda + k])) * double(to_f32(tb ? B[j * ldb + k] : B[k * ldb + j]));
  return acc;
}

// The epilogue in the order ops/bf16_gemm.h gives: acc + bias + beta * C, then act.
double epilogue(double acc, int64_t j, double c_old, const Epilogue& e) {
  double c = acc + (e.bias ? double(e.bias[j]) : 0.0) + (e.beta == 0.0f ? 0.0 : double(e.beta) * c_old);
  return e.act ? act_value(c, e.act_fn) : c;
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
               int64_t ldb, float* C, int64_t ldc, const Epilogue& e) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float& c = C[i * ldc + j];
      c = float(epilogue(dot_bf16(ta, tb, i, j, K, A, lda, B, ldb), j, e.beta == 0.0f ? 0.0 : double(c), e));
    }
}

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
               int64_t ldb, bf16* C, int64_t ldc, const Epilogue& e) {
  OC_CHECK(e.beta == 0.0f, "gemm_bf16 with a bf16 output cannot accumulate (beta={})", e.beta);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      C[i * ldc + j] = to_bf16(float(epilogue(dot_bf16(ta, tb, i, j, K, A, lda, B, ldb), j, 0.0, e)));
}

void cast_to_bf16(bf16* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}

void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                            const float* bias, int64_t N, int64_t C, double eps) {
  std::vector<float> tmp(size_t(N * C));
  layernorm_forward(tmp.data(), mean, rstd, inp, weight, bias, N, C, eps);
  cast_to_bf16(out, tmp.data(), N * C);
}

void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                const float* bias, int64_t N, int64_t C, double eps) {
  add_inplace(xm, x, N * C);
  layernorm_forward_bf16(out, mean, rstd, xm, weight, bias, N, C, eps);
}

void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act) {
  for (int64_t i = 0; i < n; ++i) out[i] = to_bf16(float(act_value(inp[i], act)));
}

namespace {
// d[M,N] (fp32 values) -> dbias += column sums (when non-null), out = bf16(d).
void colsums_and_round(bf16* out, float* dbias, const std::vector<float>& d, int64_t M, int64_t N) {
  if (dbias)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t i = 0; i < M; ++i) s += d[size_t(i * N + j)];
      dbias[j] = float(dbias[j] + s);
    }
  cast_to_bf16(out, d.data(), M * N);
}
}  // namespace

void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N, Act act) {
  std::vector<float> d(size_t(M * N));
  act_backward(d.data(), dout, inp, M * N, act);
  colsums_and_round(dinp, dbias, d, M, N);
}

void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M, int64_t N,
                         Act act) {
  act_forward_bf16(act16, h, M * N, act);
  act_backward_bf16(dh16, dbias, dact, h, M, N, act);
}

void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N) {
  colsums_and_round(out, dbias, std::vector<float>(dout, dout + M * N), M, N);
}

}  // namespace oc::ops::ref
