// Row-major GEMMs on cuBLASLt: C = alpha * op(A) @ op(B) + beta * C (+ bias[N] per row),
// optionally strided-batched, with fp32 or bf16 operands and fp32 accumulation
// (CUBLAS_COMPUTE_32F: no TF32, so fp32 is exact fp32 arithmetic). The output is fp32; bf16
// outputs are written by the caller from an fp32 result (one rounding, after the epilogue).
// UNTESTED ON A GPU (docs/CUDA.md).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace oc::ops::cuda {

struct LtGemm {
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
  const void* A = nullptr;
  int64_t lda = 0, stride_a = 0;
  const void* B = nullptr;
  int64_t ldb = 0, stride_b = 0;
  float* C = nullptr;
  int64_t ldc = 0, stride_c = 0;
  int64_t batch = 1;
  bool bf16_inputs = false;
  float alpha = 1.0f, beta = 0.0f;
  const float* bias = nullptr;  // [N], fp32, added to every row (CUBLASLT_EPILOGUE_BIAS)
};

class LtContext {
 public:
  LtContext();
  ~LtContext();
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  void run(const LtGemm& g, cudaStream_t s);

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = size_t(32) << 20;
};

}  // namespace oc::ops::cuda
