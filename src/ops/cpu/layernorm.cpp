// LayerNorm over rows: two-pass mean/variance per row (biased variance, as torch), and a
// backward whose weight/bias gradients are summed per thread and then in thread order
// (deterministic for a given thread count, no atomics).
#include "ops/cpu/layernorm.h"
#include "ops/cpu/cpu_backend.h"

#include <omp.h>

#include <cmath>

#include "ops/cpu/layernorm_row.h"
#include "ops/cpu/scratch.h"

namespace oc::ops {

template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t N,
                       int64_t C, double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < N; ++i)
    cpu::layernorm_row(out + i * C, mean + i, rstd + i, inp + i * C, weight, bias, C, eps);
}

template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const T* mean, const T* rstd, int64_t N, int64_t C) {
  // partial[t] = {dweight[C], dbias[C]} of thread t.
  const int max_threads = omp_get_max_threads();
  T* partial = cpu::thread_scratch<T>(cpu::Scratch::LayerNormPartial, size_t(max_threads) * 2 * C);
  int used_threads = 1;
#pragma omp parallel
  {
    const int nthr = omp_get_num_threads(), tid = omp_get_thread_num();
#pragma omp single
    used_threads = nthr;
    T* dw = partial + int64_t(tid) * 2 * C;
    T* db = dw + C;
    for (int64_t c = 0; c < 2 * C; ++c) dw[c] = 0;
    const int64_t r0 = N * tid / nthr, r1 = N * (tid + 1) / nthr;
    for (int64_t i = r0; i < r1; ++i) {
      const T* x = inp + i * C;
      const T* dy = dout + i * C;
      T* dx = dinp + i * C;
      const T m = mean[i], rs = rstd[i];
      // dnorm = dy * w; dx = rs * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)).
      T sum_dn = 0, sum_dn_n = 0;
#pragma omp simd reduction(+ : sum_dn, sum_dn_n)
      for (int64_t c = 0; c < C; ++c) {
        const T n = (x[c] - m) * rs, dn = dy[c] * weight[c];
        sum_dn += dn;
        sum_dn_n += dn * n;
      }
      const T mean_dn = sum_dn / T(C), mean_dn_n = sum_dn_n / T(C);
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) {
        const T n = (x[c] - m) * rs;
        dx[c] += rs * (dy[c] * weight[c] - mean_dn - n * mean_dn_n);
        dw[c] += dy[c] * n;
        db[c] += dy[c];
      }
    }
  }
  for (int t = 0; t < used_threads; ++t) {
    const T* dw = partial + int64_t(t) * 2 * C;
    for (int64_t c = 0; c < C; ++c) {
      dweight[c] += dw[c];
      dbias[c] += dw[C + c];
    }
  }
}

#define OC_INSTANTIATE(T)                                                                                      \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, double);     \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int64_t, \
                                      int64_t);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const LayerNormForwardArgs& a) {
  ops::layernorm_forward(a.out, a.mean, a.rstd, a.inp, a.weight, a.bias, a.N, a.C, a.eps);
}
void run(const LayerNormBackwardArgs& a) {
  ops::layernorm_backward(a.dinp, a.dweight, a.dbias, a.dout, a.inp, a.weight, a.mean, a.rstd, a.N, a.C);
}
}  // namespace oc::ops::cpu
