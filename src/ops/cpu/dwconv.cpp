// Depthwise convolution on the CPU: loops over channels-last rows, the channel loop innermost
// and contiguous (the compiler vectorises it: 8 floats per AVX2 lane group), OpenMP over output
// rows. Why not oneDNN's grouped convolution (groups = C): it would need the weights reordered
// to its blocked goihw layout and a bias / diff-bias memory each call, and its weight gradient
// reduces across threads in an order that depends on the thread count; here a tap is one
// multiply-add per channel on rows that are already in cache (K*K = 49 taps read 7 input rows),
// the bias is the accumulator's start, and the weight gradient sums fixed chunks of rows in
// chunk order, so its bits do not depend on the number of threads. Small maps run on one thread
// (the gradient checks call it thousands of times).
// The weights are transposed once per call to [K*K, C] (tap-major: one contiguous row per tap).
#include "ops/cpu/dwconv.h"

#include <omp.h>

#include <algorithm>

#include "core/bf16.h"
#include "core/check.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/scratch.h"

namespace oc::ops {
namespace {

void check_shape(const DwConvShape& s, const char* op) {
  OC_CHECK(s.N > 0 && s.H > 0 && s.W > 0 && s.C > 0 && s.K > 0 && s.pad >= 0,
           "{}: bad shape N={} H={} W={} C={} K={} pad={}", op, s.N, s.H, s.W, s.C, s.K, s.pad);
  OC_CHECK(s.OH() > 0 && s.OW() > 0, "{}: kernel {} (pad {}) larger than the input {}x{}", op, s.K, s.pad, s.H, s.W);
}

// x itself (F32), or its n values rounded to bf16 in the thread's scratch `slot` (BF16).
template <typename T>
const T* operand(const T* x, int64_t n, Prec prec, cpu::Scratch slot) {
  if (prec != Prec::BF16) return x;
  T* r = cpu::thread_scratch<T>(slot, size_t(n));
  for (int64_t i = 0; i < n; ++i) r[i] = T(round_bf16(float(x[i])));
  return r;
}

// weight [C,1,K,K] -> taps [K*K, C], rounded to bf16 values with Prec::BF16.
template <typename T>
const T* taps(const T* weight, const DwConvShape& s, Prec prec, bool flip) {
  const int64_t KK = s.K * s.K;
  T* t = cpu::thread_scratch<T>(cpu::Scratch::GemmB, size_t(KK * s.C));
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t k = 0; k < KK; ++k) {
      const T v = weight[c * KK + k];
      t[(flip ? KK - 1 - k : k) * s.C + c] = prec == Prec::BF16 ? T(round_bf16(float(v))) : v;
    }
  return t;
}

// dst[n, y, x, :] = (init) + sum over taps of src[n, y - off + i, x - off + j, :] * t[i*K + j]:
// the forward (off = pad) and, with the kernel flipped, the backward data (off = K - 1 - pad),
// src [N, SH, SW, C] -> dst [N, DH, DW, C].
template <typename T>
void correlate(T* dst, int64_t DH, int64_t DW, const T* src, int64_t SH, int64_t SW, const T* t, const T* init,
               const DwConvShape& s, int64_t off) {
  const int64_t C = s.C, K = s.K;
#pragma omp parallel for collapse(2) schedule(static) if (s.N * DH * DW * C * K > (1 << 16))
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t y = 0; y < DH; ++y)
      for (int64_t x = 0; x < DW; ++x) {
        T* o = dst + ((n * DH + y) * DW + x) * C;
        for (int64_t c = 0; c < C; ++c) o[c] = init ? init[c] : T(0);
        for (int64_t i = std::max<int64_t>(0, off - y); i < std::min(K, SH + off - y); ++i)
          for (int64_t j = std::max<int64_t>(0, off - x); j < std::min(K, SW + off - x); ++j) {
            const T* in = src + ((n * SH + y - off + i) * SW + x - off + j) * C;
            const T* w = t + (i * K + j) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) o[c] += in[c] * w[c];
          }
      }
}

}  // namespace

template <typename T>
void dwconv2d_forward(T* out, const T* inp, const T* weight, const T* bias, const DwConvShape& s, Prec prec) {
  check_shape(s, "dwconv2d_forward");
  const T* t = taps(weight, s, prec, false);
  const T* x = operand(inp, s.in_size(), prec, cpu::Scratch::GemmA);
  correlate(out, s.OH(), s.OW(), x, s.H, s.W, t, bias, s, s.pad);
}

template <typename T>
void dwconv2d_backward_data(T* dinp, const T* dout, const T* weight, const DwConvShape& s, Prec prec) {
  check_shape(s, "dwconv2d_backward_data");
  const T* t = taps(weight, s, prec, true);
  const T* dy = operand(dout, s.out_size(), prec, cpu::Scratch::GemmA);
  correlate(dinp, s.H, s.W, dy, s.OH(), s.OW(), t, static_cast<const T*>(nullptr), s, s.K - 1 - s.pad);
}

template <typename T>
void dwconv2d_backward_weights(T* dweight, T* dbias, const T* dout, const T* inp, const DwConvShape& s, Prec prec) {
  check_shape(s, "dwconv2d_backward_weights");
  const T* dy = operand(dout, s.out_size(), prec, cpu::Scratch::GemmA);
  const T* x = operand(inp, s.in_size(), prec, cpu::Scratch::GemmB);
  const int64_t C = s.C, K = s.K, KK = K * K, OH = s.OH(), OW = s.OW(), rows = s.N * OH;
  // Fixed chunks of output rows, each summed into its own partial [KK + 1, C] (the last row:
  // the bias), the partials added in chunk order: the same bits on any number of threads.
  const int64_t chunks = std::min<int64_t>(rows, 32), width = (KK + 1) * C;
  T* part = cpu::thread_scratch<T>(cpu::Scratch::Reduce, size_t(chunks * width));
#pragma omp parallel for schedule(static) if (rows * OW * C * K > (1 << 16))
  for (int64_t ch = 0; ch < chunks; ++ch) {
    T* p = part + ch * width;
    std::fill(p, p + width, T(0));
    for (int64_t r = rows * ch / chunks; r < rows * (ch + 1) / chunks; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t at = ((n * OH + oh) * OW + ow) * C;
        const T* g = dy + at;
        for (int64_t c = 0; c < C; ++c) p[KK * C + c] += dout[at + c];  // the bias: dout as it is
        for (int64_t i = std::max<int64_t>(0, s.pad - oh); i < std::min(K, s.H + s.pad - oh); ++i)
          for (int64_t j = std::max<int64_t>(0, s.pad - ow); j < std::min(K, s.W + s.pad - ow); ++j) {
            const T* in = x + ((n * s.H + oh - s.pad + i) * s.W + ow - s.pad + j) * C;
            T* q = p + (i * K + j) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; ++c) q[c] += g[c] * in[c];
          }
      }
    }
  }
#pragma omp parallel for schedule(static) if (C * KK * chunks > (1 << 16))
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t k = 0; k <= KK; ++k) {
      double sum = 0;
      for (int64_t ch = 0; ch < chunks; ++ch) sum += double(part[ch * width + k * C + c]);
      if (k < KK)
        dweight[c * KK + k] += T(sum);
      else if (dbias)
        dbias[c] += T(sum);
    }
  }
}

#define OC_INSTANTIATE(T)                                                                        \
  template void dwconv2d_forward<T>(T*, const T*, const T*, const T*, const DwConvShape&, Prec); \
  template void dwconv2d_backward_data<T>(T*, const T*, const T*, const DwConvShape&, Prec);     \
  template void dwconv2d_backward_weights<T>(T*, T*, const T*, const T*, const DwConvShape&, Prec);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const DwConv2dForwardArgs& a) { ops::dwconv2d_forward(a.out, a.inp, a.weight, a.bias, a.shape, a.prec); }
void run(const DwConv2dBackwardDataArgs& a) { ops::dwconv2d_backward_data(a.dinp, a.dout, a.weight, a.shape, a.prec); }
void run(const DwConv2dBackwardWeightsArgs& a) {
  ops::dwconv2d_backward_weights(a.dweight, a.dbias, a.dout, a.inp, a.shape, a.prec);
}
}  // namespace oc::ops::cpu
