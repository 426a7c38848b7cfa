// Row-major GEMMs on cuBLASLt: C = alpha * op(A) @ op(B) + beta * C (+ bias[N] per row),
// optionally strided-batched, with fp32 or bf16 operands and fp32 accumulation
// (CUBLAS_COMPUTE_32F: no TF32 unless allowed, so fp32 is exact fp32 arithmetic). The output
// is fp32; bf16 outputs are written by the caller from an fp32 result (one rounding, after the
// epilogue). Plans (matmul descriptor, layouts, the heuristic's algorithm) are cached per shape
// and operand alignment. First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <map>
#include <memory>

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

// What selects a plan: the shape, strides, types, epilogue and the pointers' alignment (the
// heuristic must not pick an algorithm that needs more alignment than the operands have).
struct LtPlanKey {
  bool ta, tb, bf16_inputs, bias, tf32;
  int64_t M, N, K, lda, ldb, ldc, batch, stride_a, stride_b, stride_c;
  uint32_t align_a, align_b, align_c;
  auto operator<=>(const LtPlanKey&) const = default;
};
struct LtPlan;

class LtContext {
 public:
  LtContext();
  ~LtContext();
  LtContext(const LtContext&) = delete;
  LtContext& operator=(const LtContext&) = delete;
  void run(const LtGemm& g, cudaStream_t s);
  // TF32 tensor cores for fp32 GEMMs (CUBLAS_COMPUTE_32F_FAST_TF32): OPENCLIP_ALLOW_TF32=1.
  void set_allow_tf32(bool on) { allow_tf32_ = on; }
  bool allow_tf32() const { return allow_tf32_; }
  size_t cached_plans() const { return plans_.size(); }

 private:
  const LtPlan& plan(const LtGemm& g);
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = size_t(32) << 20;
  bool allow_tf32_ = false;
  std::map<LtPlanKey, std::unique_ptr<LtPlan>> plans_;
};

}  // namespace oc::ops::cuda
