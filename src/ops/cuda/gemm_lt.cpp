// cuBLASLt GEMMs (gemm_lt.h). Row-major C[M,N] = op(A) op(B) is computed as the column-major
// C^T[N,M] = op(B)^T op(A)^T: cuBLASLt's "A" is our B (its stored row-major [K,N] is column-
// major [N,K]), its "B" is our A. The algorithm is cuBLASLt's first heuristic choice for the
// shape, asked once per LtPlanKey and cached with the descriptor and layouts.
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/gemm_lt.h"

#include <memory>

#include "ops/cuda/cuda_check.h"

namespace oc::ops::cuda {

template <class T, cublasStatus_t (*Destroy)(T)>
struct LtHandle {
  T h = nullptr;
  LtHandle() = default;
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  ~LtHandle() {
    if (h) Destroy(h);
  }
};
using Desc = LtHandle<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = LtHandle<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Pref = LtHandle<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

struct LtPlan {
  Desc desc;
  Layout la, lb, lc;
  cublasLtMatmulAlgo_t algo{};
};

namespace {

// A column-major rows x cols matrix with leading dimension ld (elements), batched.
void make_layout(Layout& l, cudaDataType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  OC_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l.h, t, uint64_t(rows), uint64_t(cols), ld));
  if (batch > 1) {
    const int32_t b = int32_t(batch);
    OC_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b));
    OC_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(l.h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
}

// The largest power of two (at most 256, cuBLASLt's default assumption) dividing the address.
uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && a % al != 0) al /= 2;
  return al;
}

void set_pref(Pref& pref, cublasLtMatmulPreferenceAttributes_t attr, uint32_t v) {
  OC_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.h, attr, &v, sizeof v));
}

}  // namespace

LtContext::LtContext() {
  OC_CUBLAS_CHECK(cublasLtCreate(&handle_));
  OC_CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
}

LtContext::~LtContext() {
  plans_.clear();
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(handle_);
}

const LtPlan& LtContext::plan(const LtGemm& g) {
  const bool tf32 = allow_tf32_ && !g.bf16_inputs;
  const LtPlanKey key{g.ta,     g.tb,     g.bf16_inputs, g.bias != nullptr, tf32,       g.M,        g.N,
                      g.K,      g.lda,    g.ldb,         g.ldc,             g.batch,    g.stride_a, g.stride_b,
                      g.stride_c, alignment(g.A), alignment(g.B), alignment(g.C)};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  auto p = std::make_unique<LtPlan>();
  const cudaDataType in_t = g.bf16_inputs ? CUDA_R_16BF : CUDA_R_32F;
  OC_CUBLAS_CHECK(
      cublasLtMatmulDescCreate(&p->desc.h, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t op_b = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLASLt's A = our B, its B = our A.
  OC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b));
  OC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a));
  if (g.bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;  // bias[m] of the column-major result = our bias[N]
    OC_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc.h, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    const cudaDataType bias_t = CUDA_R_32F;
    OC_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->desc.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_t, sizeof bias_t));
  }
  make_layout(p->la, in_t, g.tb ? g.K : g.N, g.tb ? g.N : g.K, g.ldb, g.batch, g.stride_b);
  make_layout(p->lb, in_t, g.ta ? g.M : g.K, g.ta ? g.K : g.M, g.lda, g.batch, g.stride_a);
  make_layout(p->lc, CUDA_R_32F, g.N, g.M, g.ldc, g.batch, g.stride_c);

  Pref pref;
  OC_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.h));
  OC_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                       &workspace_bytes_, sizeof workspace_bytes_));
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b);  // its A is our B
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_c);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_c);
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  OC_CUBLAS_CHECK(
      cublasLtMatmulAlgoGetHeuristic(handle_, p->desc.h, p->la.h, p->lb.h, p->lc.h, p->lc.h, pref.h, 1, &heur, &found));
  OC_CHECK(found > 0, "cuBLASLt has no algorithm for the GEMM M={} N={} K={} batch={} ({})", g.M, g.N, g.K, g.batch,
           g.bf16_inputs ? "bf16" : "fp32");
  p->algo = heur.algo;
  return *plans_.emplace(key, std::move(p)).first->second;
}

void LtContext::run(const LtGemm& g, cudaStream_t s) {
  if (g.M == 0 || g.N == 0) return;
  const LtPlan& p = plan(g);
  if (g.bias)  // the pointer is read when cublasLtMatmul is called: one cached descriptor serves every bias
    OC_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc.h, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias));
  OC_CUBLAS_CHECK(cublasLtMatmul(handle_, p.desc.h, &g.alpha, g.B, p.la.h, g.A, p.lb.h, &g.beta, g.C, p.lc.h, g.C,
                                 p.lc.h, &p.algo, workspace_, workspace_bytes_, s));
}

}  // namespace oc::ops::cuda
