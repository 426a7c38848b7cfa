// Launchers of the CUDA kernels in kernels_*.cu: device pointers, sizes, the backend's
// stream. Plain C++ so the backend (a .cpp) includes it without CUDA device code. Launch errors
// are picked up by the caller (OC_CUDA_CHECK(cudaGetLastError())).
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace oc::ops::cuda {

using bf16_t = uint16_t;  // bits of a bfloat16 (core/bf16.h's layout)

// ---- elementwise (kernels_elementwise.cu) ----
void fill(float* x, int64_t n, float v, cudaStream_t s);
void add_inplace(float* y, const float* x, int64_t n, cudaStream_t s);
void scale_inplace(float* x, int64_t n, float a, cudaStream_t s);
// act: 0 = GELU (erf), 1 = QuickGELU (x * sigmoid(1.702 x)), as ops::Act.
void act_forward(float* out, const float* inp, int64_t n, int act, cudaStream_t s);
void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, int act, cudaStream_t s);
// C[M,N] (row stride ldc) = act(C) in place; or out16 = bf16(act?(C)) with act < 0 meaning none.
void act_rows_inplace(float* C, int64_t ldc, int64_t M, int64_t N, int act, cudaStream_t s);
void rows_to_bf16(bf16_t* out, int64_t ldo, const float* C, int64_t ldc, int64_t M, int64_t N, int act,
                  cudaStream_t s);
void cast_to_bf16(bf16_t* dst, const float* src, int64_t n, cudaStream_t s);
// Round to bf16 values kept in fp32 (Prec::BF16 operands of the fp32 GEMMs).
void round_bf16_f32(float* dst, const float* src, int64_t n, cudaStream_t s);
// AdamW over chunks {span offset, count, wd-as-bits} of one arena layout, one launch.
struct AdamWChunk {
  int64_t offset;
  int32_t n;
  float wd;
};
void adamw_chunks(float* p, const float* g, float* m, float* v, const AdamWChunk* chunks, int64_t nchunks, float lr,
                  float step_size, float bc2_sqrt, float beta1, float beta2, float one_m_b1, float one_m_b2, float eps,
                  cudaStream_t s);
// sum of squares in double: partial[kReduceBlocks] then one block; result in *out (device).
constexpr int kReduceBlocks = 512;
void sum_squares(double* out, double* partial, const float* x, int64_t n, cudaStream_t s);
void count_nonfinite(int* flag, const float* x, int64_t n, cudaStream_t s);  // *flag = 1 if any

// ---- image batches (kernels_pixels.cu): uint8 HWC -> normalised fp32 CHW (ops/pixels.h);
// mean, std: 3 host floats ----
void normalize_images(float* out, const uint8_t* px, const float* mean, const float* std, int64_t B, int64_t S,
                      cudaStream_t s);

// ---- rows (kernels_rows.cu) ----
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int64_t N, int64_t C, double eps, cudaStream_t s);
void layernorm_backward_dx(float* dinp, const float* dout, const float* inp, const float* w, const float* mean,
                           const float* rstd, int64_t N, int64_t C, cudaStream_t s);
// Column sums over many rows (parameter gradients), parallel and deterministic: a grid of
// (column block, row chunk) writes double partial sums (`partial`: kColChunks * columns
// doubles of scratch per sum), then add_column_partials adds the chunks in order.
constexpr int kColChunks = 64;
inline int column_chunks(int64_t rows) { return int(rows < kColChunks ? (rows < 1 ? 1 : rows) : kColChunks); }
void add_column_partials(float* dst, const double* partial, int chunks, int64_t N, cudaStream_t s);  // dst[N] +=
// dweight[c] += sum_n dout*xhat, dbias[c] += sum_n dout (each may be null); partial: 2 * kColChunks * C.
void layernorm_backward_dwdb(float* dw, float* db, double* partial, const float* dout, const float* inp,
                             const float* mean, const float* rstd, int64_t N, int64_t C, cudaStream_t s);
// dst[N] += column sums of x[M,N]; partial: kColChunks * N.
void col_sums_acc(float* dst, double* partial, const float* x, int64_t M, int64_t N, cudaStream_t s);
void l2norm_forward(float* out, float* norm, const float* inp, int64_t N, int64_t C, cudaStream_t s);
void l2norm_backward(float* dinp, const float* dout, const float* out, const float* norm, int64_t N, int64_t C,
                     cudaStream_t s);
void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C, cudaStream_t s);
void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N, int64_t C,
                          cudaStream_t s);
void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C,
                         cudaStream_t s);
void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C,
                          cudaStream_t s);
// idx: device copies of the host index arrays.
void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                           int64_t C, cudaStream_t s);
void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                            int64_t C, cudaStream_t s);
void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P, cudaStream_t s);
void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                       int64_t C, cudaStream_t s);
void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np, int64_t C,
                        cudaStream_t s);
void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                         int64_t C, cudaStream_t s);
void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                          int64_t C, cudaStream_t s);

}  // namespace oc::ops::cuda
