// AdamW step (torch.optim.AdamW, single-tensor path) and the gradient-norm helpers.
// Scalars are formed the way torch forms them: Python floats (double) from the
// hyper-parameters, converted to float where they meet a float tensor op.
#include "ops/cpu/adamw.h"
#include "ops/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/cpu/scratch.h"

namespace oc::ops {

namespace {

// torch.optim.AdamW's scalars for one step, formed as torch forms them.
struct AdamWScalars {
  float beta1, beta2, one_m_b1, one_m_b2, step_size, bc2_sqrt, eps;
};

AdamWScalars adamw_scalars(float lr, float beta1, float beta2, float eps, int64_t step) {
  OC_CHECK(step >= 1, "adamw_step: step {} must be >= 1 (1-based, after increment)", step);
  const double b1 = beta1, b2 = beta2;
  const double bc1 = 1.0 - std::pow(b1, double(step)), bc2 = 1.0 - std::pow(b2, double(step));
  return {beta1, beta2, float(1.0 - b1), float(1.0 - b2), float(double(lr) / bc1), float(std::sqrt(bc2)), eps};
}

inline void adamw_range(float* p, const float* g, float* m, float* v, int64_t n, float decay, const AdamWScalars& s) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] * s.beta1 + s.one_m_b1 * gi;             // exp_avg.mul_(b1).add_(g, alpha=1-b1)
    const float vi = v[i] * s.beta2 + s.one_m_b2 * gi * gi;        // exp_avg_sq.mul_(b2).addcmul_(g, g, 1-b2)
    const float denom = std::sqrt(vi) / s.bc2_sqrt + s.eps;        // (v.sqrt() / bc2_sqrt).add_(eps)
    p[i] = p[i] * decay - s.step_size * (mi / denom);              // addcdiv_(m, denom, value=-step_size)
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                float eps, float wd, int64_t step) {
  const AdamWScalars s = adamw_scalars(lr, beta1, beta2, eps, step);
  const float decay = float(1.0 - double(lr) * double(wd));  // param.mul_(1 - lr * wd)
  constexpr int64_t kChunk = 1 << 14;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n > (1 << 15))
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t b = c * kChunk;
    adamw_range(p + b, g + b, m + b, v + b, std::min(kChunk, n - b), decay, s);
  }
}

void adamw_step_spans(float* p, const float* g, float* m, float* v, std::span<const AdamWSpan> spans, float lr,
                      float beta1, float beta2, float eps, int64_t step) {
  const AdamWScalars s = adamw_scalars(lr, beta1, beta2, eps, step);
  struct Chunk {
    int64_t offset, n;
    float decay;
  };
  constexpr int64_t kChunk = 1 << 14;
  std::vector<Chunk> chunks;
  for (const AdamWSpan& sp : spans) {
    const float decay = float(1.0 - double(lr) * double(sp.wd));
    for (int64_t b = 0; b < sp.n; b += kChunk) chunks.push_back({sp.offset + b, std::min(kChunk, sp.n - b), decay});
  }
#pragma omp parallel for schedule(static)
  for (size_t c = 0; c < chunks.size(); ++c) {
    const Chunk& k = chunks[c];
    adamw_range(p + k.offset, g + k.offset, m + k.offset, v + k.offset, k.n, k.decay, s);
  }
}

double sum_squares(const float* x, int64_t n) {
  // One partial per thread over a fixed contiguous range, added in thread order.
  constexpr int kPad = 8;  // partials a cache line apart
  double* partial = cpu::thread_scratch<double>(cpu::Scratch::Reduce, size_t(omp_get_max_threads()) * kPad);
  int used = 1;
#pragma omp parallel if (n > (1 << 15))
  {
    const int nthr = omp_get_num_threads(), tid = omp_get_thread_num();
#pragma omp single
    used = nthr;
    const int64_t b = n * tid / nthr, e = n * (tid + 1) / nthr;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < e; ++i) s += double(x[i]) * double(x[i]);
    partial[tid * kPad] = s;
  }
  double total = 0;
  for (int t = 0; t < used; ++t) total += partial[t * kPad];
  return total;
}

void scale_inplace(float* x, int64_t n, float s) {
#pragma omp parallel for simd schedule(static) if (n > (1 << 15))
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

bool all_finite(const float* x, int64_t n) {
  int bad = 0;
#pragma omp parallel for simd schedule(static) reduction(| : bad) if (n > (1 << 15))
  for (int64_t i = 0; i < n; ++i) bad |= !std::isfinite(x[i]);
  return bad == 0;
}

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const AdamWStepArgs& a) {
  ops::adamw_step(a.p, a.g, a.m, a.v, a.n, a.lr, a.beta1, a.beta2, a.eps, a.wd, a.step);
}
void run(const AdamWStepSpansArgs& a) {
  ops::adamw_step_spans(a.p, a.g, a.m, a.v, a.spans, a.lr, a.beta1, a.beta2, a.eps, a.step);
}
double run(const SumSquaresArgs& a) { return ops::sum_squares(a.x, a.n); }
void run(const ScaleInplaceArgs& a) { ops::scale_inplace(a.x, a.n, a.s); }
bool run(const AllFiniteArgs& a) { return ops::all_finite(a.x, a.n); }
}  // namespace oc::ops::cpu
