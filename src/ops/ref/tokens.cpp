// Reference LayerScale, token mean and token gather (OpenCLIP's tower options), sums in double.
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) x[n * C + c] *= gamma[c];
}

void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N, int64_t C) {
  for (int64_t c = 0; c < C; ++c) {
    double s = 0;
    for (int64_t n = 0; n < N; ++n) s += double(dy[n * C + c]) * double(o_dx[n * C + c]);
    dgamma[c] += float(s);
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) o_dx[n * C + c] = gamma[c] * dy[n * C + c];
}

void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t t = first; t < Tn; ++t) s += inp[(b * Tn + t) * C + c];
      out[b * C + c] = float(s / double(Tn - first));
    }
}

void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = first; t < Tn; ++t)
      for (int64_t c = 0; c < C; ++c) dinp[(b * Tn + t) * C + c] += float(double(dout[b * C + c]) / double(Tn - first));
}

void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) out[(b * K + k) * C + c] = inp[(b * Tn + idx[b * K + k]) * C + c];
}

void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                            int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) dinp[(b * Tn + idx[b * K + k]) * C + c] += dout[(b * K + k) * C + c];
}

}  // namespace oc::ops::ref
