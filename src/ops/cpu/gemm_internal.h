// The two bf16 paths of gemm<float>, exposed so tests can run the native one (oneDNN matmul
// with bf16 inputs) on a CPU whose dispatch would pick the rounding fallback.
#pragma once
#include <cstdint>

namespace oc::ops::cpu {

// C = alpha * op(A) @ op(B) + beta * C with A and B converted to bf16 and a oneDNN matmul
// primitive (bf16 x bf16 -> f32), cached per shape and thread. Throws dnnl::error when this
// oneDNN build cannot create such a primitive on this CPU.
void gemm_bf16_matmul(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                      int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Same contract: A and B rounded to bf16 values (kept in float) and dnnl_sgemm.
void gemm_bf16_rounded(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                       int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace oc::ops::cpu
