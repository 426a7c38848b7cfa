// AdamW as torch.optim.AdamW (decoupled weight decay), and the global gradient norm.
#pragma once
#include <cstdint>

namespace oc::ops {

// One step over n parameters; `step` is the 1-based step count after increment.
//   p *= 1 - lr*wd;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//   p -= lr / (1 - b1^step) * m / (sqrt(v) / sqrt(1 - b2^step) + eps)
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                float eps, float wd, int64_t step);

// sum of squares in double, deterministic for a given thread count.
double sum_squares(const float* x, int64_t n);
void scale_inplace(float* x, int64_t n, float s);
bool all_finite(const float* x, int64_t n);

}  // namespace oc::ops
