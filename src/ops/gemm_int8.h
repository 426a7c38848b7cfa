// int8 inference GEMMs (--precision int8): C = epilogue(A @ W^T) with W quantized once per
// output channel (symmetric, s8: q = round(W / scale_n), scale_n = max|W[n,:]| / 127) and A
// quantized per row on every call (symmetric, s8: q = round(A * (127 / max|A[m,:]|)), scale_m =
// max|A[m,:]| / 127; a zero row has scale 1); s8 x s8 products accumulate exactly in int32,
// and C = scale_m * scale_n * acc, then bias and the activation, in fp32.
// A row of A holding NaN or Inf gets a NaN scale, so its whole output row is NaN: non-finite
// activations propagate (as in fp32, where every output of that row reads the bad value).
// Only the cpu backend has them (oneDNN's s8 matmul, on a CPU with VNNI: ops/dnnl_info.h);
// elsewhere the calls fail with an error naming the backend. (Free functions taking the
// backend rather than Backend virtuals: inference-only, cpu-only, and ops/backend.h unchanged.)
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/bf16.h"
#include "ops/gemm_bf16.h"

namespace oc::ops {

class Backend;

// A weight W [N, K] quantized by a backend: kept in its own int8 layout with the per-channel
// scales. Owned by the caller (a std::unique_ptr from quantize_weight_int8).
class Int8Weight {
 public:
  virtual ~Int8Weight() = default;
  int64_t N = 0, K = 0;
  std::string name;  // the parameter it came from, for errors
};

// scales: empty = computed from W (max|W[n,:]| / 127); else N finite positive values (the
// calibrated or stored scales of `name`), checked. W must be finite: a non-finite weight is
// an error naming `name` and the row (it would make its scale, and every output, wrong).
struct QuantizeWeightInt8Args {
  const float* W;  // [N, K] row-major, host memory of the backend
  int64_t N, K;
  std::string name;
  std::span<const float> scales = {};
};

// C[M, N] = epilogue(A @ W^T), A [M, K] bf16 (row stride lda), C fp32 or bf16 (one of C,
// C16; row stride ldc). e.beta must be 0 (nothing accumulates into an int8 GEMM's output).
struct GemmInt8Args {
  int64_t M;
  const bf16* A;
  int64_t lda;
  const Int8Weight* W;
  float* C = nullptr;
  bf16* C16 = nullptr;
  int64_t ldc;
  Epilogue e = {};
};

// Whether `be` has the int8 GEMMs: the cpu backend on a CPU with VNNI (ops/dnnl_info.h's
// int8_native()).
bool has_int8(const Backend& be);
// W quantized into `be`'s int8 layout (an error naming the backend where it has none).
std::unique_ptr<Int8Weight> quantize_weight_int8(Backend& be, const QuantizeWeightInt8Args& a);
void gemm_int8(Backend& be, const GemmInt8Args& a);

}  // namespace oc::ops
