// int8 inference GEMMs (--precision int8): C = epilogue(A @ W^T) with W quantized once per
// output channel (symmetric, s8: q = round(W / scale_n), scale_n = max|W[n,:]| / 127) and A
// quantized per row on every call (symmetric, s8: q = round(A * (127 / max|A[m,:]|)), scale_m =
// max|A[m,:]| / 127; a zero row has scale 1); s8 x s8 products accumulate exactly in int32,
// and C = scale_m * scale_n * acc, then bias and the activation, in fp32.
// A row of A holding NaN or Inf gets a NaN scale, so its whole output row is NaN: non-finite
// activations propagate (as in fp32, where every output of that row reads the bad value).
// Static scales (`openclip quantize`, model/int8_scales.h): a weight may carry the calibrated
// per-tensor scale s of its input (Int8Weight::input_scale); then its input is quantized with
// s (q = round(x / s), clamped to +-127; every finite row's scale is s, a row holding NaN or
// Inf still gets NaN), by the GEMM itself, or already by its producer: LayerNormInt8Args,
// GemmInt8Args::Cq (the c_fc epilogue writing c_proj's input) and AttentionInt8Args.
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
  std::string name;          // the parameter it came from, for errors
  float input_scale = 0.0f;  // the static scale of its input; 0: dynamic (per row, on each call)
};

// scales: empty = computed from W (max|W[n,:]| / 127); else N finite positive values (the
// calibrated or stored scales of `name`), checked. W must be finite: a non-finite weight is
// an error naming `name` and the row (it would make its scale, and every output, wrong).
struct QuantizeWeightInt8Args {
  const float* W;  // [N, K] row-major, host memory of the backend
  int64_t N, K;
  std::string name;
  std::span<const float> scales = {};
  float input_scale = 0.0f;  // Int8Weight::input_scale (checked finite and >= 0)
};

// Rows of A already quantized as gemm_int8 quantizes them: q [M, K] (row stride K) and the
// row scales [M] (1 for a zero row, NaN for a row holding NaN or Inf; the static scale for
// every other row when quantized with one).
struct Int8Rows {
  const int8_t* q;
  const float* scale;
};

// Int8 rows written by a producer: q [M, K], scale [M], quantized with `scale_in` (> 0).
struct Int8Out {
  int8_t* q;
  float* scale;
  float scale_in;
};

// C[M, N] = epilogue(A @ W^T), C fp32 or bf16 (one of C, C16; row stride ldc), A one of: A
// [M, K] bf16 or A32 [M, K] fp32 (row stride lda; quantized per row on the call), or Aq
// (quantized before, e.g. by LayerNormInt8Args). e.beta must be 0 (nothing accumulates into
// an int8 GEMM's output).
struct GemmInt8Args {
  int64_t M;
  const bf16* A = nullptr;
  int64_t lda = 0;
  const Int8Weight* W;
  float* C = nullptr;
  bf16* C16 = nullptr;
  int64_t ldc;
  Epilogue e = {};
  const float* A32 = nullptr;
  const Int8Rows* Aq = nullptr;
  // Instead of C/C16: the output quantized for the next GEMM with its static input scale
  // (Cq->q [M, N], row stride N; Cq->scale[m] = Cq->scale_in, NaN where A's row m is NaN).
  const Int8Out* Cq = nullptr;
};

// LayerNorm into int8 rows: with `residual`, inp += residual first (written back: the block's
// residual stream); then out = LayerNorm(inp) rounded to bf16 and quantized per row, in one
// pass: exactly LayerNormForwardBf16's output as gemm_int8 would quantize it, without the bf16
// rows in memory. q [N, C], scale [N], mean/rstd [N] as LayerNormForwardBf16 saves them.
struct LayerNormInt8Args {
  int8_t* q;
  float* scale;
  float* mean;
  float* rstd;
  float* inp;
  const float* residual = nullptr;
  const float* weight;
  const float* bias;
  int64_t N, C;
  double eps;
  float static_scale = 0.0f;  // > 0: quantize with this scale (the next GEMM's input_scale)
};

// AttentionForwardBf16Args with the output written as int8 rows for out_proj, quantized with
// its static input scale (out.q [B*Tn, C], out.scale [B*Tn]; a row with a non-finite value
// gets scale NaN). att [B,H,T,T] is scratch as there.
struct AttentionInt8Args {
  Int8Out out;
  float* att;
  const bf16* qkv;
  int64_t B, Tn, C, H;
  bool causal;
};

// Whether `be` has the int8 GEMMs: the cpu backend on a CPU with VNNI (ops/dnnl_info.h's
// int8_native()).
bool has_int8(const Backend& be);
// W quantized into `be`'s int8 layout (an error naming the backend where it has none).
std::unique_ptr<Int8Weight> quantize_weight_int8(Backend& be, const QuantizeWeightInt8Args& a);
void gemm_int8(Backend& be, const GemmInt8Args& a);
void layernorm_int8(Backend& be, const LayerNormInt8Args& a);
void attention_int8(Backend& be, const AttentionInt8Args& a);

}  // namespace oc::ops
