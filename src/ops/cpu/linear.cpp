// nn.Linear and the [in, out] projections, forward and backward, as gemm calls plus a bias.
#include "ops/cpu/linear.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/linear_packed.h"

#include <omp.h>

#include <algorithm>
#include <type_traits>

namespace oc::ops {
namespace {

// dbias[N] += column sums of dout[M,N]. Columns are split across threads and every column
// is summed over rows in order, so the result does not even depend on the thread count.
template <typename T>
void column_sums_add(T* dbias, const T* dout, int64_t M, int64_t N) {
  constexpr int64_t kBlock = 64;  // columns per task: the accumulators stay in registers
  const int64_t nblocks = (N + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (M * N > (1 << 15))
  for (int64_t blk = 0; blk < nblocks; ++blk) {
    const int64_t j0 = blk * kBlock, j1 = std::min(N, j0 + kBlock);
    T acc[kBlock] = {};
    for (int64_t i = 0; i < M; ++i) {
      const T* row = dout + i * N;
#pragma omp simd
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
    }
    for (int64_t j = j0; j < j1; ++j) dbias[j] += acc[j - j0];
  }
}

}  // namespace

template <typename T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t M, int64_t K, int64_t N,
                    Prec prec) {
  if constexpr (std::is_same_v<T, float>)  // fp32 inference on a prepared weight (linear_packed.cpp)
    if (prec == Prec::F32 && linear_forward_prepared(out, inp, weight, bias, M, K, N)) return;
  float beta = 0.0f;
  if (bias) {
    // Start from the bias and let the gemm accumulate onto it (beta = 1): no extra pass.
#pragma omp parallel for schedule(static) if (M * N > (1 << 15))
    for (int64_t i = 0; i < M; ++i) std::copy(bias, bias + N, out + i * N);
    beta = 1.0f;
  }
  gemm<T>(false, true, M, N, K, 1.0f, inp, K, weight, K, beta, out, N, prec);
}

template <typename T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t M,
                     int64_t K, int64_t N, Prec prec) {
  if (dinp) gemm<T>(false, false, M, K, N, 1.0f, dout, N, weight, K, 0.0f, dinp, K, prec);
  if (dweight) gemm<T>(true, false, N, K, M, 1.0f, dout, N, inp, K, 1.0f, dweight, K, prec);
  if (dbias) column_sums_add(dbias, dout, M, N);
}

template <typename T>
void proj_forward(T* out, const T* inp, const T* w, int64_t M, int64_t K, int64_t N, Prec prec) {
  gemm<T>(false, false, M, N, K, 1.0f, inp, K, w, N, 0.0f, out, N, prec);
}

template <typename T>
void proj_backward(T* dinp, T* dw, const T* dout, const T* inp, const T* w, int64_t M, int64_t K, int64_t N,
                   Prec prec) {
  if (dinp) gemm<T>(false, true, M, K, N, 1.0f, dout, N, w, N, 0.0f, dinp, K, prec);
  if (dw) gemm<T>(true, false, K, N, M, 1.0f, inp, K, dout, N, 1.0f, dw, N, prec);
}

#define OC_INSTANTIATE(T)                                                                                  \
  template void linear_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, Prec);      \
  template void linear_backward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t,    \
                                   Prec);                                                                  \
  template void proj_forward<T>(T*, const T*, const T*, int64_t, int64_t, int64_t, Prec);                  \
  template void proj_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, int64_t, int64_t, Prec);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const LinearForwardArgs& a) { ops::linear_forward(a.out, a.inp, a.weight, a.bias, a.M, a.K, a.N, a.prec); }
void run(const LinearBackwardArgs& a) {
  ops::linear_backward(a.dinp, a.dweight, a.dbias, a.dout, a.inp, a.weight, a.M, a.K, a.N, a.prec);
}
void run(const ProjForwardArgs& a) { ops::proj_forward(a.out, a.inp, a.w, a.M, a.K, a.N, a.prec); }
void run(const ProjBackwardArgs& a) { ops::proj_backward(a.dinp, a.dw, a.dout, a.inp, a.w, a.M, a.K, a.N, a.prec); }
}  // namespace oc::ops::cpu
