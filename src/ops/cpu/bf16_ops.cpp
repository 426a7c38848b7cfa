// Fused fp32 -> bf16 passes. Rows are split across threads; column sums are kept per thread
// and added in thread order, so results are deterministic for a given thread count.
#include "ops/cpu/bf16_ops.h"
#include "ops/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "ops/cpu/act_internal.h"
#include "ops/cpu/bf16_convert.h"
#include "ops/cpu/layernorm_row.h"
#include "ops/cpu/scratch.h"

namespace oc::ops {
namespace {

// One LayerNorm row as layernorm_forward<float> computes it, the output rounded to bf16.
void ln_row(bf16* out, float* tmp, float* mean, float* rstd, const float* x, const float* w, const float* b, int64_t C,
            double eps) {
  cpu::layernorm_row(tmp, mean, rstd, x, w, b, C, eps);
  cpu::to_bf16_row(out, tmp, C);
}

// Rows [0, M) split across threads; f(row, tid_partial) where partial is this thread's
// [N] column-sum slice (zeroed), or null when dbias is null. Partials are then added into
// dbias in thread order.
template <class F>
void rows_with_colsums(int64_t M, int64_t N, float* dbias, F f) {
  const int max_threads = omp_get_max_threads();
  float* partial =
      dbias ? cpu::thread_scratch<float>(cpu::Scratch::Bf16Partial, size_t(max_threads) * size_t(N)) : nullptr;
  int used = 1;
#pragma omp parallel if (M * N > (1 << 15))
  {
    const int nthr = omp_get_num_threads(), tid = omp_get_thread_num();
#pragma omp single
    used = nthr;
    float* part = partial ? partial + int64_t(tid) * N : nullptr;
    if (part) std::fill(part, part + N, 0.0f);
    const int64_t r0 = M * tid / nthr, r1 = M * (tid + 1) / nthr;
    for (int64_t i = r0; i < r1; ++i) f(i, part);
  }
  if (!dbias) return;
  for (int t = 0; t < used; ++t) {
    const float* part = partial + int64_t(t) * N;
    for (int64_t j = 0; j < N; ++j) dbias[j] += part[j];
  }
}

}  // namespace

void cast_to_bf16(bf16* dst, const float* src, int64_t n) {
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * kChunk;
    cpu::to_bf16_row(dst + b, src + b, std::min(kChunk, n - b));
  }
}

void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                            const float* bias, int64_t N, int64_t C, double eps) {
#pragma omp parallel
  {
    float* tmp = cpu::thread_scratch<float>(cpu::Scratch::GemmC, size_t(C));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) ln_row(out + i * C, tmp, mean + i, rstd + i, inp + i * C, weight, bias, C, eps);
  }
}

void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                const float* bias, int64_t N, int64_t C, double eps) {
#pragma omp parallel
  {
    float* tmp = cpu::thread_scratch<float>(cpu::Scratch::GemmC, size_t(C));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; ++i) {
      float* r = xm + i * C;
      const float* a = x + i * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) r[c] += a[c];
      ln_row(out + i * C, tmp, mean + i, rstd + i, r, weight, bias, C, eps);
    }
  }
}

void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act) {
  constexpr int64_t kChunk = 1 << 12;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel if (chunks > 1)
  {
    float* tmp = cpu::thread_scratch<float>(cpu::Scratch::GemmC, size_t(kChunk));
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t b = c * kChunk, len = std::min(kChunk, n - b);
      act_forward<float>(tmp, inp + b, len, act);  // one chunk: runs on this thread
      cpu::to_bf16_row(out + b, tmp, len);
    }
  }
}

void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N, Act act) {
  rows_with_colsums(M, N, dbias, [&](int64_t i, float* part) {
    float* tmp = cpu::thread_scratch<float>(cpu::Scratch::GemmC, size_t(N));
    act_backward<float>(tmp, dout + i * N, inp + i * N, N, act);  // one row: runs on this thread
    if (part) {
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) part[j] += tmp[j];
    }
    cpu::to_bf16_row(dinp + i * N, tmp, N);
  });
}

void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M, int64_t N,
                         Act act) {
  rows_with_colsums(M, N, dbias, [&](int64_t i, float* part) {
    float* v = cpu::thread_scratch<float>(cpu::Scratch::GemmC, size_t(2 * N));
    float* d = v + N;
    cpu::act_value_and_grad_f32(v, d, dact + i * N, h + i * N, N, act);
    if (part) {
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) part[j] += d[j];
    }
    cpu::to_bf16_row(act16 + i * N, v, N);
    cpu::to_bf16_row(dh16 + i * N, d, N);
  });
}

void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N) {
  rows_with_colsums(M, N, dbias, [&](int64_t i, float* part) {
    const float* d = dout + i * N;
    if (part) {
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) part[j] += d[j];
    }
    cpu::to_bf16_row(out + i * N, d, N);
  });
}

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const RoundToBf16Args& a) { oc::round_to_bf16(a.x, a.x, size_t(a.n)); }
void run(const CastToBf16Args& a) { ops::cast_to_bf16(a.dst, a.src, a.n); }
void run(const LayerNormForwardBf16Args& a) {
  ops::layernorm_forward_bf16(a.out, a.mean, a.rstd, a.inp, a.weight, a.bias, a.N, a.C, a.eps);
}
void run(const AddLayerNormForwardBf16Args& a) {
  ops::add_layernorm_forward_bf16(a.xm, a.out, a.mean, a.rstd, a.x, a.weight, a.bias, a.N, a.C, a.eps);
}
void run(const ActForwardBf16Args& a) { ops::act_forward_bf16(a.out, a.inp, a.n, a.act); }
void run(const ActBackwardBf16Args& a) { ops::act_backward_bf16(a.dinp, a.dbias, a.dout, a.inp, a.M, a.N, a.act); }
void run(const ActValueGradBf16Args& a) {
  ops::act_value_grad_bf16(a.act16, a.dh16, a.dbias, a.dact, a.h, a.M, a.N, a.act);
}
void run(const BiasGradToBf16Args& a) { ops::bias_grad_to_bf16(a.out, a.dbias, a.dout, a.M, a.N); }
}  // namespace oc::ops::cpu
