// Average pooling, AttentionPool2d's token matrix and ReLU on channels-last activations.
// Each output element is one thread's sum in a fixed order: deterministic at any thread count.
#include "ops/cpu/pool.h"

#include <algorithm>

#include "core/check.h"
#include "ops/cpu/cpu_backend.h"

namespace oc::ops {
namespace {
void check_pool(int64_t H, int64_t W, int64_t k, const char* op) {
  OC_CHECK(k > 0 && H >= k && W >= k, "{}: window {} larger than the input {}x{}", op, k, H, W);
}
}  // namespace

template <typename T>
void avg_pool_forward(T* out, const T* inp, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k) {
  check_pool(H, W, k, "avg_pool_forward");
  const int64_t OH = H / k, OW = W / k;
  const T inv = T(1) / T(k * k);
#pragma omp parallel for schedule(static) if (N * H * W * C > (1 << 15))
  for (int64_t row = 0; row < N * OH; ++row) {
    const int64_t n = row / OH, oh = row % OH;
    for (int64_t ow = 0; ow < OW; ++ow) {
      T* o = out + (row * OW + ow) * C;
      std::fill(o, o + C, T(0));
      for (int64_t i = 0; i < k; ++i)
        for (int64_t j = 0; j < k; ++j) {
          const T* x = inp + ((n * H + oh * k + i) * W + ow * k + j) * C;
#pragma omp simd
          for (int64_t c = 0; c < C; ++c) o[c] += x[c];
        }
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) o[c] *= inv;
    }
  }
}

template <typename T>
void avg_pool_backward(T* dinp, const T* dout, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k) {
  check_pool(H, W, k, "avg_pool_backward");
  const int64_t OH = H / k, OW = W / k;
  const T inv = T(1) / T(k * k);
#pragma omp parallel for schedule(static) if (N * H * W * C > (1 << 15))
  for (int64_t row = 0; row < N * H; ++row) {
    const int64_t n = row / H, h = row % H, oh = h / k;
    for (int64_t w = 0; w < W; ++w) {
      T* d = dinp + (row * W + w) * C;
      const int64_t ow = w / k;
      if (oh >= OH || ow >= OW) {
        std::fill(d, d + C, T(0));
        continue;
      }
      const T* g = dout + ((n * OH + oh) * OW + ow) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) d[c] = g[c] * inv;
    }
  }
}

template <typename T>
void attnpool_tokens_forward(T* x, const T* feat, const T* pos, int64_t N, int64_t HW, int64_t C) {
  OC_CHECK(HW > 0 && C > 0, "attnpool_tokens_forward: bad shape HW={} C={}", HW, C);
  const T inv = T(1) / T(HW);
#pragma omp parallel for schedule(static) if (N * HW * C > (1 << 15))
  for (int64_t n = 0; n < N; ++n) {
    T* x0 = x + n * (HW + 1) * C;
    std::fill(x0, x0 + C, T(0));
    for (int64_t t = 0; t < HW; ++t) {
      const T* f = feat + (n * HW + t) * C;
      const T* p = pos + (1 + t) * C;
      T* xt = x0 + (1 + t) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) x0[c] += f[c], xt[c] = f[c] + p[c];
    }
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) x0[c] = x0[c] * inv + pos[c];
  }
}

template <typename T>
void attnpool_tokens_backward(T* dfeat, T* dpos, const T* dx, int64_t N, int64_t HW, int64_t C) {
  OC_CHECK(HW > 0 && C > 0, "attnpool_tokens_backward: bad shape HW={} C={}", HW, C);
  const int64_t T1 = HW + 1;
  const T inv = T(1) / T(HW);
#pragma omp parallel for schedule(static) if (N * HW * C > (1 << 15))
  for (int64_t nt = 0; nt < N * HW; ++nt) {
    const int64_t n = nt / HW, t = nt % HW;
    const T *g = dx + (n * T1 + 1 + t) * C, *g0 = dx + n * T1 * C;
    T* d = dfeat + nt * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) d[c] = g[c] + g0[c] * inv;
  }
  if (!dpos) return;
#pragma omp parallel for schedule(static) if (N * HW * C > (1 << 15))
  for (int64_t j = 0; j < T1; ++j)
    for (int64_t n = 0; n < N; ++n) {
      const T* g = dx + (n * T1 + j) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dpos[j * C + c] += g[c];
    }
}

template <typename T>
void relu_forward(T* out, const T* inp, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) out[i] = inp[i] < T(0) ? T(0) : inp[i];  // NaN < 0 is false: NaN kept
}

template <typename T>
void relu_backward(T* dinp, const T* dout, const T* out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) dinp[i] = out[i] <= T(0) ? T(0) : dout[i];
}

#define OC_INSTANTIATE(T)                                                                        \
  template void avg_pool_forward<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t);  \
  template void avg_pool_backward<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t, int64_t); \
  template void attnpool_tokens_forward<T>(T*, const T*, const T*, int64_t, int64_t, int64_t);   \
  template void attnpool_tokens_backward<T>(T*, T*, const T*, int64_t, int64_t, int64_t);        \
  template void relu_forward<T>(T*, const T*, int64_t);                                          \
  template void relu_backward<T>(T*, const T*, const T*, int64_t);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const AvgPoolForwardArgs& a) { ops::avg_pool_forward(a.out, a.inp, a.N, a.H, a.W, a.C, a.k); }
void run(const AvgPoolBackwardArgs& a) { ops::avg_pool_backward(a.dinp, a.dout, a.N, a.H, a.W, a.C, a.k); }
void run(const AttnPoolTokensForwardArgs& a) { ops::attnpool_tokens_forward(a.x, a.feat, a.pos, a.N, a.HW, a.C); }
void run(const AttnPoolTokensBackwardArgs& a) { ops::attnpool_tokens_backward(a.dfeat, a.dpos, a.dx, a.N, a.HW, a.C); }
void run(const ReluForwardArgs& a) { ops::relu_forward(a.out, a.inp, a.n); }
void run(const ReluBackwardArgs& a) { ops::relu_backward(a.dinp, a.dout, a.out, a.n); }
}  // namespace oc::ops::cpu
