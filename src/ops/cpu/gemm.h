// The CPU GEMM kernels (contract: GemmArgs, GemmBatchedArgs in ops/gemm.h). float goes to
// oneDNN (dnnl_sgemm, or its bf16 matmul where the CPU has native bf16); double is a plain loop
// used by the gradient checks (with Prec::BF16 it rounds its inputs the same way and
// accumulates in double: the float path's reference).
#pragma once
#include <cstdint>

#include "ops/gemm.h"

namespace oc::ops {

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, float beta, T* C, int64_t ldc, Prec prec = Prec::F32);

template <typename T>
void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, float beta, T* C,
                  int64_t ldc, int64_t stride_c, Prec prec = Prec::F32);

}  // namespace oc::ops
