// BatchNorm2d over rows [R, C] (channels-last). Column sums in double: rows in blocks of
// kRows, each block's partial sums by one thread, then the blocks added in order per column
// (deterministic for any thread count); backward's two sums in one pass over the rows. The
// normalisation itself is one fused multiply-add per element with per-column constants, on
// x - mean (no cancellation between large terms).
#include "ops/cpu/batchnorm.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/scratch.h"

namespace oc::ops {
namespace {

constexpr int64_t kRows = 256;

template <class F>
void add_row(double* p, int64_t r, int64_t C, const F& f) {
#pragma omp simd
  for (int64_t c = 0; c < C; ++c) p[c] += f(r, c);
}

// out[k][c] = sum_r f_k(r, c) for each function f_k (returning double), all in one pass over
// the rows: blocks of kRows rows in parallel, each block's partial sums in the caller's thread
// scratch (no allocation per call), then the blocks added in order per column. Each sum is
// added in the same order as it would be alone.
template <class... F>
void column_sums(int64_t R, int64_t C, std::array<double*, sizeof...(F)> out, const F&... f) {
  constexpr int64_t K = sizeof...(F);
  const int64_t blocks = (R + kRows - 1) / kRows;
  double* part = cpu::thread_scratch<double>(cpu::Scratch::Reduce, size_t(blocks * K * C));
#pragma omp parallel for schedule(static) if (R * C > (1 << 15))
  for (int64_t bk = 0; bk < blocks; ++bk) {
    double* p = part + bk * K * C;
    std::fill(p, p + K * C, 0.0);
    for (int64_t r = bk * kRows; r < std::min(R, (bk + 1) * kRows); ++r) {
      int64_t k = 0;
      (add_row(p + (k++) * C, r, C, f), ...);
    }
  }
  for (int64_t k = 0; k < K; ++k) {
    std::fill(out[size_t(k)], out[size_t(k)] + C, 0.0);
    for (int64_t bk = 0; bk < blocks; ++bk)
      for (int64_t c = 0; c < C; ++c) out[size_t(k)][c] += part[(bk * K + k) * C + c];
  }
}

// f(r) for each row, threaded when large.
template <class F>
void each_row(int64_t R, int64_t C, F f) {
#pragma omp parallel for schedule(static) if (R * C > (1 << 15))
  for (int64_t r = 0; r < R; ++r) f(r);
}

}  // namespace

template <typename T>
void batchnorm_forward(T* out, T* mean, T* rstd, T* running_mean, T* running_var, const T* inp, const T* weight,
                       const T* bias, int64_t R, int64_t C, double eps, double momentum, bool training) {
  OC_CHECK(R > 0 && C > 0, "batchnorm_forward: bad shape R={} C={}", R, C);
  OC_CHECK(!training || R > 1, "batchnorm_forward: training needs more than one value per channel (R={})", R);
  std::vector<double> m(static_cast<size_t>(C)), v(static_cast<size_t>(C));
  if (training) {
    column_sums(R, C, {m.data()}, [&](int64_t r, int64_t c) { return double(inp[r * C + c]); });
    for (double& x : m) x /= double(R);
    column_sums(R, C, {v.data()}, [&](int64_t r, int64_t c) {
      const double d = double(inp[r * C + c]) - m[size_t(c)];
      return d * d;
    });
    for (int64_t c = 0; c < C; ++c) {
      v[size_t(c)] /= double(R);
      running_mean[c] = T((1 - momentum) * double(running_mean[c]) + momentum * m[size_t(c)]);
      running_var[c] = T((1 - momentum) * double(running_var[c]) + momentum * v[size_t(c)] * double(R) / double(R - 1));
    }
  } else {
    for (int64_t c = 0; c < C; ++c) m[size_t(c)] = double(running_mean[c]), v[size_t(c)] = double(running_var[c]);
  }
  std::vector<T> mu(static_cast<size_t>(C)), scale(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const double rs = 1.0 / std::sqrt(v[size_t(c)] + eps);
    mean[c] = mu[size_t(c)] = T(m[size_t(c)]), rstd[c] = T(rs);
    scale[size_t(c)] = T(rs * double(weight[c]));
  }
  each_row(R, C, [&](int64_t r) {
    const T* x = inp + r * C;
    T* y = out + r * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) y[c] = (x[c] - mu[size_t(c)]) * scale[size_t(c)] + bias[c];
  });
}

template <typename T>
void batchnorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* mean,
                        const T* rstd, int64_t R, int64_t C, bool training) {
  OC_CHECK(R > 0 && C > 0, "batchnorm_backward: bad shape R={} C={}", R, C);
  std::vector<double> sd(static_cast<size_t>(C)), sdx(static_cast<size_t>(C)), md(static_cast<size_t>(C)),
      rd(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) md[size_t(c)] = double(mean[c]), rd[size_t(c)] = double(rstd[c]);
  column_sums(
      R, C, {sd.data(), sdx.data()}, [&](int64_t r, int64_t c) { return double(dout[r * C + c]); },
      [&](int64_t r, int64_t c) {
        return double(dout[r * C + c]) * (double(inp[r * C + c]) - md[size_t(c)]) * rd[size_t(c)];
      });
  for (int64_t c = 0; c < C; ++c) {
    if (dweight) dweight[c] += T(sdx[size_t(c)]);
    if (dbias) dbias[c] += T(sd[size_t(c)]);
  }
  if (!dinp) return;
  // dinp = k * (dout - a) - (k * b * rstd) * (inp - mean), with k = weight * rstd, a = mean_r(dout),
  // b = mean_r(dout * xhat) (a = b = 0 in eval mode: the statistics are constants).
  std::vector<T> k(static_cast<size_t>(C)), a(static_cast<size_t>(C)), kb(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    const double kc = double(weight[c]) * double(rstd[c]);
    const double b = training ? sdx[size_t(c)] / double(R) : 0.0;
    k[size_t(c)] = T(kc);
    a[size_t(c)] = T(training ? sd[size_t(c)] / double(R) : 0.0);
    kb[size_t(c)] = T(kc * b * double(rstd[c]));
  }
  each_row(R, C, [&](int64_t r) {
    const T *g = dout + r * C, *x = inp + r * C;
    T* d = dinp + r * C;
    if (!training) {  // inp does not enter (a NaN in it stays out of dinp, as in the definition)
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) d[c] = k[size_t(c)] * g[c];
      return;
    }
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) d[c] = k[size_t(c)] * (g[c] - a[size_t(c)]) - kb[size_t(c)] * (x[c] - mean[c]);
  });
}

#define OC_INSTANTIATE(T)                                                                                             \
  template void batchnorm_forward<T>(T*, T*, T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, double,      \
                                     double, bool);                                                                   \
  template void batchnorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int64_t, int64_t, \
                                      bool);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const BatchNormForwardArgs& a) {
  ops::batchnorm_forward(a.out, a.mean, a.rstd, a.running_mean, a.running_var, a.inp, a.weight, a.bias, a.R, a.C, a.eps,
                         a.momentum, a.training);
}
void run(const BatchNormBackwardArgs& a) {
  ops::batchnorm_backward(a.dinp, a.dweight, a.dbias, a.dout, a.inp, a.weight, a.mean, a.rstd, a.R, a.C, a.training);
}
}  // namespace oc::ops::cpu
