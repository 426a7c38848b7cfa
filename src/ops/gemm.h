// Matrix multiply, the only op where the machine's peak matters (cpu: oneDNN sgemm, or its
// bf16 matmul where the CPU has native bf16; cuda: cuBLASLt).
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

// F32: plain fp32. BF16: inputs rounded to bfloat16, products accumulated in fp32 (what
// autocast to bf16 computes). On CPUs without native bf16 (no AVX512-BF16/AMX) the rounded
// values run through the fp32 kernel: the same math, at fp32 speed.
enum class Prec { F32, BF16 };

// C[M,N] = alpha * op(A) @ op(B) + beta * C, row-major; op(X) = X^T when ta / tb. A is
// [M,K] (or [K,M] when ta), B is [K,N] (or [N,K] when tb); lda/ldb/ldc are row strides in
// elements. beta == 0 never reads C (BLAS semantics: C may hold NaN).
struct GemmArgs {
  bool ta, tb;
  int64_t M, N, K;
  float alpha;
  const float* A;
  int64_t lda;
  const float* B;
  int64_t ldb;
  float beta;
  float* C;
  int64_t ldc;
  Prec prec = Prec::F32;
};

// Batched: for b in [0, batch): C_b = alpha * op(A_b) @ op(B_b) + beta * C_b, with element
// strides between consecutive matrices.
struct GemmBatchedArgs {
  int64_t batch;
  bool ta, tb;
  int64_t M, N, K;
  float alpha;
  const float* A;
  int64_t lda, stride_a;
  const float* B;
  int64_t ldb, stride_b;
  float beta;
  float* C;
  int64_t ldc, stride_c;
  Prec prec = Prec::F32;
};

}  // namespace oc::ops
