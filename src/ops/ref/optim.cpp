// Reference AdamW and the gradient-norm helpers. AdamW is defined by torch.optim.AdamW's
// float arithmetic (OpenCLIP compatibility is bit-level on the scalars), so this loop
// performs the same float operations in the same order as torch's single-tensor path.
#include <cmath>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

void run(const AdamWStepArgs& a) {
  const auto& [p, g, m, v, n, lr, beta1, beta2, eps, wd, step] = a;
  OC_CHECK(step >= 1, "adamw_step: step {} must be >= 1 (1-based, after increment)", step);
  const double bc1 = 1.0 - std::pow(double(beta1), double(step));
  const double bc2 = 1.0 - std::pow(double(beta2), double(step));
  const float step_size = float(double(lr) / bc1), bc2_sqrt = float(std::sqrt(bc2));
  const float one_m_b1 = float(1.0 - double(beta1)), one_m_b2 = float(1.0 - double(beta2));
  const float decay = float(1.0 - double(lr) * double(wd));
  for (int64_t i = 0; i < n; ++i) {
    m[i] = m[i] * beta1 + one_m_b1 * g[i];
    v[i] = v[i] * beta2 + one_m_b2 * g[i] * g[i];
    const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
    p[i] = p[i] * decay - step_size * (m[i] / denom);
  }
}

void run(const AdamWStepSpansArgs& a) {
  const auto& [p, g, m, v, spans, lr, beta1, beta2, eps, step] = a;
  for (const AdamWSpan& s : spans)
    run(AdamWStepArgs{.p = p + s.offset, .g = g + s.offset, .m = m + s.offset, .v = v + s.offset, .n = s.n, .lr = lr,
                      .beta1 = beta1, .beta2 = beta2, .eps = eps, .wd = s.wd, .step = step});
}

double run(const SumSquaresArgs& a) {
  const auto& [x, n] = a;
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
  return s;
}

void run(const ScaleInplaceArgs& a) {
  const auto& [x, n, s] = a;
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

bool run(const AllFiniteArgs& a) {
  const auto& [x, n] = a;
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

}  // namespace oc::ops::ref
