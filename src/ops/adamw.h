// AdamW as torch.optim.AdamW (decoupled weight decay), and the global gradient norm.
#pragma once
#include <cstdint>
#include <vector>

namespace oc::ops {

// One step over n parameters; `step` is the 1-based step count after increment.
//   p *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps)
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                float eps, float wd, int64_t step);

// The same step over many tensors of one arena layout (p, g, m, v at the same offsets) in
// one threaded pass: spans are cut into chunks and the chunks split across threads, so
// small tensors (biases, LayerNorms) do not each pay a parallel region. Elementwise, so the
// result is bitwise that of adamw_step per span, for any thread count.
struct AdamWSpan {
  int64_t offset, n;
  float wd;  // 0: no decay
};
void adamw_step_spans(float* p, const float* g, float* m, float* v, const std::vector<AdamWSpan>& spans, float lr,
                      float beta1, float beta2, float eps, int64_t step);

// sum of squares in double, deterministic for a given thread count.
double sum_squares(const float* x, int64_t n);
void scale_inplace(float* x, int64_t n, float s);
bool all_finite(const float* x, int64_t n);

}  // namespace oc::ops
