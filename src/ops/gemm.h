// Matrix multiply, the only op where the machine's peak matters. float goes to oneDNN
// (dnnl_sgemm, or its bf16 matmul where the CPU has native bf16); double is a plain loop
// used by the gradient checks.
#pragma once
#include <cstdint>
#include <string>

namespace oc::ops {

// F32: plain fp32. BF16: inputs rounded to bfloat16, products accumulated in fp32 (what
// autocast to bf16 computes). On CPUs without native bf16 (no AVX512-BF16/AMX) the rounded
// values run through the fp32 kernel: the same math, at fp32 speed. (gemm<double> with BF16
// rounds its inputs the same way and accumulates in double: the float path's reference.)
enum class Prec { F32, BF16 };

// C[M,N] = alpha * op(A) @ op(B) + beta * C, row-major; op(X) = X^T when trans_X.
// lda/ldb/ldc are row strides in elements. A is [M,K] (or [K,M] when trans_a), B is [K,N]
// (or [N,K] when trans_b).
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
          int64_t lda, const T* B, int64_t ldb, float beta, T* C, int64_t ldc, Prec prec = Prec::F32);

// Batched: for b in [0, batch): C_b = alpha * op(A_b) @ op(B_b) + beta * C_b, with element
// strides between consecutive matrices.
template <typename T>
void gemm_batched(int64_t batch, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                  const T* A, int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b,
                  float beta, T* C, int64_t ldc, int64_t stride_c, Prec prec = Prec::F32);

// The ISA oneDNN dispatches to on this machine ("avx2", "avx512_core_amx", ...), and
// whether bf16 matmuls run natively.
std::string dnnl_isa();
bool native_bf16();

}  // namespace oc::ops
