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

void run(const GemmBf16Args& a) {
  const auto& [ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e] = a;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float& c = C[i * ldc + j];
      c = float(epilogue(dot_bf16(ta, tb, i, j, K, A, lda, B, ldb), j, e.beta == 0.0f ? 0.0 : double(c), e));
    }
}

void run(const GemmBf16ToBf16Args& a) {
  const auto& [ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e] = a;
  OC_CHECK(e.beta == 0.0f, "gemm_bf16 with a bf16 output cannot accumulate (beta={})", e.beta);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      C[i * ldc + j] = to_bf16(float(epilogue(dot_bf16(ta, tb, i, j, K, A, lda, B, ldb), j, 0.0, e)));
}

void run(const CastToBf16Args& a) {
  const auto& [dst, src, n] = a;
  for (int64_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}

void run(const LayerNormForwardBf16Args& a) {
  const auto& [out, mean, rstd, inp, weight, bias, N, C, eps] = a;
  std::vector<float> tmp(size_t(N * C));
  run(LayerNormForwardArgs{.out = tmp.data(), .mean = mean, .rstd = rstd, .inp = inp, .weight = weight, .bias = bias,
                           .N = N, .C = C, .eps = eps});
  run(CastToBf16Args{.dst = out, .src = tmp.data(), .n = N * C});
}

void run(const AddLayerNormForwardBf16Args& a) {
  const auto& [xm, out, mean, rstd, x, weight, bias, N, C, eps] = a;
  run(AddInplaceArgs{.y = xm, .x = x, .n = N * C});
  run(LayerNormForwardBf16Args{.out = out, .mean = mean, .rstd = rstd, .inp = xm, .weight = weight, .bias = bias,
                               .N = N, .C = C, .eps = eps});
}

void run(const ActForwardBf16Args& a) {
  const auto& [out, inp, n, act] = a;
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
  run(CastToBf16Args{.dst = out, .src = d.data(), .n = M * N});
}
}  // namespace

void run(const ActBackwardBf16Args& a) {
  const auto& [dinp, dbias, dout, inp, M, N, act] = a;
  std::vector<float> d(size_t(M * N));
  run(ActBackwardArgs{.dinp = d.data(), .dout = dout, .inp = inp, .n = M * N, .act = act});
  colsums_and_round(dinp, dbias, d, M, N);
}

void run(const ActValueGradBf16Args& a) {
  const auto& [act16, dh16, dbias, dact, h, M, N, act] = a;
  run(ActForwardBf16Args{.out = act16, .inp = h, .n = M * N, .act = act});
  run(ActBackwardBf16Args{.dinp = dh16, .dbias = dbias, .dout = dact, .inp = h, .M = M, .N = N, .act = act});
}

void run(const BiasGradToBf16Args& a) {
  const auto& [out, dbias, dout, M, N] = a;
  colsums_and_round(out, dbias, std::vector<float>(dout, dout + M * N), M, N);
}

void run(const RoundToBf16Args& a) {
  for (int64_t i = 0; i < a.n; ++i) a.x[i] = round_bf16(a.x[i]);
}

}  // namespace oc::ops::ref
