// The CPU kernels of AdamW and the gradient norm's reductions (contract: ops/adamw.h).
#pragma once
#include <cstdint>
#include <span>

#include "ops/adamw.h"

namespace oc::ops {

void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
                float wd, int64_t step);
void adamw_step_spans(float* p, const float* g, float* m, float* v, std::span<const AdamWSpan> spans, float lr,
                      float beta1, float beta2, float eps, int64_t step);
// Deterministic for a given thread count.
double sum_squares(const float* x, int64_t n);
void scale_inplace(float* x, int64_t n, float s);
bool all_finite(const float* x, int64_t n);

}  // namespace oc::ops
