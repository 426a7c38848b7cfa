// Reference LayerScale, token mean and token gather (OpenCLIP's tower options), sums in double.
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

void run(const LayerScaleForwardArgs& a) {
  const auto& [x, gamma, N, C] = a;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) x[n * C + c] *= gamma[c];
}

void run(const LayerScaleBackwardArgs& a) {
  const auto& [dgamma, o_dx, dy, gamma, N, C] = a;
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n) s += double(dy[n * C + c]) * double(o_dx[n * C + c]);
    dgamma[c] += float(s);
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) o_dx[n * C + c] = gamma[c] * dy[n * C + c];
}

void run(const MeanTokensForwardArgs& a) {
  const auto& [out, inp, B, Tn, first, C] = a;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t t = first; t < Tn; ++t) s += inp[(b * Tn + t) * C + c];
      out[b * C + c] = float(s / double(Tn - first));
    }
}

void run(const MeanTokensBackwardArgs& a) {
  const auto& [dinp, dout, B, Tn, first, C] = a;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = first; t < Tn; ++t)
      for (int64_t c = 0; c < C; ++c) dinp[(b * Tn + t) * C + c] += float(double(dout[b * C + c]) / double(Tn - first));
}

void run(const GatherTokensForwardArgs& a) {
  const auto& [out, inp, idx, B, Tn, K, C] = a;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) out[(b * K + k) * C + c] = inp[(b * Tn + idx[b * K + k]) * C + c];
}

void run(const GatherTokensBackwardArgs& a) {
  const auto& [dinp, dout, idx, B, Tn, K, C] = a;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) dinp[(b * Tn + idx[b * K + k]) * C + c] += dout[(b * K + k) * C + c];
}

}  // namespace oc::ops::ref
