// AdamW as torch.optim.AdamW (decoupled weight decay), and the global gradient norm's
// reductions.
#pragma once
#include <cstdint>
#include <span>

#include "ops/op_args.h"

namespace oc::ops {

// One step over n parameters; `step` is the 1-based step count after increment.
//   p *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps)
struct AdamWStepArgs {
  float* p;
  const float* g;
  float* m;
  float* v;
  int64_t n;
  float lr, beta1, beta2, eps, wd;
  int64_t step;
};

// The same step over many tensors of one arena layout (p, g, m, v at the same offsets) in
// one threaded pass: spans are cut into chunks and the chunks split across threads, so
// small tensors (biases, LayerNorms) do not each pay a parallel region. Elementwise, so the
// result is bitwise that of adamw_step per span, for any thread count.
struct AdamWSpan {
  int64_t offset, n;
  float wd;  // 0: no decay
};
struct AdamWStepSpansArgs {
  float* p;
  const float* g;
  float* m;
  float* v;
  std::span<const AdamWSpan> spans;  // host
  float lr, beta1, beta2, eps;
  int64_t step;
};

// Sum of x[n]^2 in double, deterministic for a given thread count.
struct SumSquaresArgs {
  using Result = double;
  const float* x;
  int64_t n;
};

// x[n] *= s.
struct ScaleInplaceArgs {
  float* x;
  int64_t n;
  float s;
};

// Whether no x[i] is NaN or Inf.
struct AllFiniteArgs {
  using Result = bool;
  const float* x;
  int64_t n;
};

}  // namespace oc::ops
