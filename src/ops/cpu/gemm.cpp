// gemm on the CPU. float: oneDNN's dnnl_sgemm (JIT AVX2/AVX-512 kernels, OpenMP threads; run
// from inside a parallel region it is single-threaded). BF16: oneDNN's bf16 matmul where the
// CPU has native bf16, else inputs rounded to bf16 values and dnnl_sgemm (same math).
// double: plain loops, for the gradient checks and as the reference of the float paths.
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <tuple>
#include <type_traits>

#include "core/bf16.h"
#include "core/check.h"
#include "ops/cpu/gemm_internal.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/scratch.h"
#include "ops/dnnl_info.h"
#include "ops/cpu/gemm.h"

namespace oc::ops {
namespace cpu {
namespace {

void check_layout(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
  OC_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm: negative size M={} N={} K={}", M, N, K);
  OC_CHECK(lda >= std::max<int64_t>(1, ta ? M : K), "gemm: lda={} too small (M={} K={} trans_a={})", lda, M, K, ta);
  OC_CHECK(ldb >= std::max<int64_t>(1, tb ? K : N), "gemm: ldb={} too small (K={} N={} trans_b={})", ldb, K, N, tb);
  OC_CHECK(ldc >= std::max<int64_t>(1, N), "gemm: ldc={} too small (N={})", ldc, N);
}

// C = beta * C for K == 0 (BLAS semantics: beta == 0 writes zeros without reading C).
template <typename T>
void scale_c(int64_t M, int64_t N, float beta, T* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? T(0) : T(beta) * C[i * ldc + j];
}

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  OC_CHECK(st == dnnl_success, "dnnl_sgemm failed (status {}) for M={} N={} K={} lda={} ldb={} ldc={}", int(st), M,
           N, K, lda, ldb, ldc);
}

// The bits of round_bf16(f), written so the loop below vectorizes (select, no branch).
inline uint32_t bf16_round_bits(uint32_t u) {
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  uint32_t quiet_nan = (u | 0x00400000u) & 0xffff0000u;
  return (u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded;
}

// Copies a rows x cols block with row stride ld into a packed block, converting each value:
// Out = float (rounded to a bf16 value) or bf16. Threaded when called outside a parallel region.
template <typename Out>
void pack_bf16(Out* dst, const float* src, int64_t rows, int64_t cols, int64_t ld) {
  auto row = [&](int64_t r) {
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src + r * ld);
    if constexpr (std::is_same_v<Out, float>) {
      uint32_t* d = reinterpret_cast<uint32_t*>(dst + r * cols);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) d[c] = bf16_round_bits(s[c]);
    } else {
      uint16_t* d = reinterpret_cast<uint16_t*>(dst + r * cols);
#pragma omp simd
      for (int64_t c = 0; c < cols; ++c) d[c] = uint16_t(bf16_round_bits(s[c]) >> 16);
    }
  };
  if (!omp_in_parallel() && rows * cols >= (int64_t(1) << 15)) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) row(r);
  } else {
    for (int64_t r = 0; r < rows; ++r) row(r);
  }
}

bool has_native_bf16() {
  static const bool native = bf16_gemm_native();
  return native;
}

// One matmul primitive per (shape, layout, alpha, beta); oneDNN's own cache would still
// rebuild the primitive descriptor on every call, which costs more than a small matmul.
struct MatmulKey {
  int64_t M, N, K, ldc;
  bool ta, tb;
  float alpha, beta;
  auto tie() const { return std::tie(M, N, K, ldc, ta, tb, alpha, beta); }
  bool operator<(const MatmulKey& o) const { return tie() < o.tie(); }
};

const dnnl::engine& cpu_engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The double reference: BF16 rounds each input to its bf16 value (through float), so it gives
// exactly the products the float BF16 path multiplies.
void gemm_f64(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const double* A, int64_t lda,
              const double* B, int64_t ldb, float beta, double* C, int64_t ldc, bool bf16_inputs) {
  auto in = [bf16_inputs](double x) { return bf16_inputs ? double(round_bf16(float(x))) : x; };
#pragma omp parallel for schedule(static) if (M * N * K > (1 << 16))
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += in(ta ? A[k * lda + i] : A[i * lda + k]) * in(tb ? B[j * ldb + k] : B[k * ldb + j]);
      double& c = C[i * ldc + j];
      c = double(alpha) * acc + (beta == 0.0f ? 0.0 : double(beta) * c);
    }
  }
}

}  // namespace

void gemm_bf16_rounded(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  check_layout(ta, tb, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_c(M, N, beta, C, ldc);
  // op(A) keeps its storage orientation when packed: rows x cols with cols contiguous.
  const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
  float* a = thread_scratch<float>(Scratch::GemmA, size_t(a_rows * a_cols));
  float* b = thread_scratch<float>(Scratch::GemmB, size_t(b_rows * b_cols));
  pack_bf16(a, A, a_rows, a_cols, lda);
  pack_bf16(b, B, b_rows, b_cols, ldb);
  sgemm(ta, tb, M, N, K, alpha, a, a_cols, b, b_cols, beta, C, ldc);
}

void gemm_bf16_matmul(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                      const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  check_layout(ta, tb, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_c(M, N, beta, C, ldc);
  using dt = dnnl::memory::data_type;
  using md = dnnl::memory::desc;
  const int64_t a_rows = ta ? K : M, a_cols = ta ? M : K, b_rows = tb ? N : K, b_cols = tb ? K : N;
  bf16* a = thread_scratch<bf16>(Scratch::GemmA, size_t(a_rows * a_cols));
  bf16* b = thread_scratch<bf16>(Scratch::GemmB, size_t(b_rows * b_cols));
  pack_bf16(a, A, a_rows, a_cols, lda);
  pack_bf16(b, B, b_rows, b_cols, ldb);

  // Logical src [M,K], weights [K,N], dst [M,N]; a transposed operand is the packed block
  // read with swapped strides.
  const md a_md({M, K}, dt::bf16, ta ? dnnl::memory::dims{1, M} : dnnl::memory::dims{K, 1});
  const md b_md({K, N}, dt::bf16, tb ? dnnl::memory::dims{1, K} : dnnl::memory::dims{N, 1});
  const md c_md({M, N}, dt::f32, dnnl::memory::dims{ldc, 1});

  thread_local std::map<MatmulKey, dnnl::matmul> cache;
  thread_local dnnl::stream stream(cpu_engine());
  const MatmulKey key{M, N, K, ldc, ta, tb, alpha, beta};
  auto it = cache.find(key);
  if (it == cache.end()) {
    // dst = alpha * (A @ B) + beta * dst: a linear post-op (alpha * x), then the sum post-op.
    dnnl::primitive_attr attr;
    dnnl::post_ops po;
    if (alpha != 1.0f) po.append_eltwise(dnnl::algorithm::eltwise_linear, alpha, 0.0f);
    if (beta != 0.0f) po.append_sum(beta);
    attr.set_post_ops(po);
    dnnl::matmul::primitive_desc pd(cpu_engine(), a_md, b_md, c_md, attr);
    it = cache.emplace(key, dnnl::matmul(pd)).first;
  }
  dnnl::memory am(a_md, cpu_engine(), a), bm(b_md, cpu_engine(), b), cm(c_md, cpu_engine(), C);
  it->second.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  stream.wait();
}

}  // namespace cpu

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A, int64_t lda, const T* B,
          int64_t ldb, float beta, T* C, int64_t ldc, Prec prec) {
  if constexpr (std::is_same_v<T, double>) {
    cpu::check_layout(ta, tb, M, N, K, lda, ldb, ldc);
    cpu::gemm_f64(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, prec == Prec::BF16);
  } else {
    if (prec == Prec::BF16) {
      if (cpu::has_native_bf16()) return cpu::gemm_bf16_matmul(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
      return cpu::gemm_bf16_rounded(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    }
    cpu::check_layout(ta, tb, M, N, K, lda, ldb, ldc);
    if (M == 0 || N == 0) return;
    if (K == 0) return cpu::scale_c(M, N, beta, C, ldc);
    cpu::sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t, Prec);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, float, const double*, int64_t, const double*,
                           int64_t, float, double*, int64_t, Prec);

template <typename T>
void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
                  int64_t lda, int64_t stride_a, const T* B, int64_t ldb, int64_t stride_b, float beta, T* C,
                  int64_t ldc, int64_t stride_c, Prec prec) {
  // Small matrices (attention heads: 50x50x64) cannot keep two cores busy each, so the batch
  // is split across threads and each sgemm runs single-threaded. On this 2-core Zen 3, QK^T
  // of 1536 heads: 48 GFLOP/s this way against 30 for a loop of threaded sgemm calls
  // (bench/ops_bench.cpp, BM_GemmBatchedHeads). A hand-written 6x16 AVX2 kernel was tried
  // and was no faster than oneDNN's at these sizes (both ~80 GFLOP/s per core, hot caches).
  const bool across = !omp_in_parallel() && batch >= 2 && M * N * K <= (int64_t(1) << 21);
  if (across) {
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < batch; ++b)
      gemm<T>(ta, tb, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta, C + b * stride_c, ldc, prec);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      gemm<T>(ta, tb, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta, C + b * stride_c, ldc, prec);
  }
}

template void gemm_batched<float>(int64_t, bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                  int64_t, const float*, int64_t, int64_t, float, float*, int64_t, int64_t, Prec);
template void gemm_batched<double>(int64_t, bool, bool, int64_t, int64_t, int64_t, float, const double*, int64_t,
                                   int64_t, const double*, int64_t, int64_t, float, double*, int64_t, int64_t, Prec);

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const GemmArgs& a) {
  ops::gemm(a.ta, a.tb, a.M, a.N, a.K, a.alpha, a.A, a.lda, a.B, a.ldb, a.beta, a.C, a.ldc, a.prec);
}
void run(const GemmBatchedArgs& a) {
  ops::gemm_batched(a.batch, a.ta, a.tb, a.M, a.N, a.K, a.alpha, a.A, a.lda, a.stride_a, a.B, a.ldb, a.stride_b, a.beta,
                    a.C, a.ldc, a.stride_c, a.prec);
}
}  // namespace oc::ops::cpu
