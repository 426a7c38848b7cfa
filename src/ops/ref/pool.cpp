// Reference BatchNorm2d, average pooling and AttentionPool2d's tokens (ops/batchnorm.h,
// ops/pool.h), channels-last, sums in double.
#include <cmath>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

void run(const BatchNormForwardArgs& a) {
  const int64_t R = a.R, C = a.C;
  for (int64_t c = 0; c < C; ++c) {
    double mean = a.running_mean[c], var = a.running_var[c];
    if (a.training) {
      double s = 0, ss = 0;
      for (int64_t r = 0; r < R; ++r) s += a.inp[r * C + c];
      mean = s / double(R);
      for (int64_t r = 0; r < R; ++r) ss += (a.inp[r * C + c] - mean) * (a.inp[r * C + c] - mean);
      var = ss / double(R);
      a.running_mean[c] = float((1 - a.momentum) * a.running_mean[c] + a.momentum * mean);
      a.running_var[c] = float((1 - a.momentum) * a.running_var[c] + a.momentum * var * double(R) / double(R - 1));
    }
    const double rstd = 1.0 / std::sqrt(var + a.eps);
    a.mean[c] = float(mean);
    a.rstd[c] = float(rstd);
    for (int64_t r = 0; r < R; ++r)
      a.out[r * C + c] = float((a.inp[r * C + c] - mean) * rstd * a.weight[c] + a.bias[c]);
  }
}

void run(const BatchNormBackwardArgs& a) {
  const int64_t R = a.R, C = a.C;
  for (int64_t c = 0; c < C; ++c) {
    const double mean = a.mean[c], rstd = a.rstd[c];
    double sd = 0, sdx = 0;
    for (int64_t r = 0; r < R; ++r) {
      sd += a.dout[r * C + c];
      sdx += a.dout[r * C + c] * (a.inp[r * C + c] - mean) * rstd;
    }
    if (a.dweight) a.dweight[c] += float(sdx);
    if (a.dbias) a.dbias[c] += float(sd);
    if (!a.dinp) continue;
    const double k = double(a.weight[c]) * rstd;
    for (int64_t r = 0; r < R; ++r) {
      const double d = a.dout[r * C + c], xhat = (a.inp[r * C + c] - mean) * rstd;
      a.dinp[r * C + c] = float(a.training ? k * (d - sd / double(R) - xhat * sdx / double(R)) : k * d);
    }
  }
}

void run(const AvgPoolForwardArgs& a) {
  const int64_t OH = a.H / a.k, OW = a.W / a.k, C = a.C;
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t c = 0; c < C; ++c) {
          double s = 0;
          for (int64_t i = 0; i < a.k; ++i)
            for (int64_t j = 0; j < a.k; ++j) s += a.inp[((n * a.H + oh * a.k + i) * a.W + ow * a.k + j) * C + c];
          a.out[((n * OH + oh) * OW + ow) * C + c] = float(s / double(a.k * a.k));
        }
}

void run(const AvgPoolBackwardArgs& a) {
  const int64_t OH = a.H / a.k, OW = a.W / a.k, C = a.C;
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t h = 0; h < a.H; ++h)
      for (int64_t w = 0; w < a.W; ++w)
        for (int64_t c = 0; c < C; ++c) {
          const int64_t oh = h / a.k, ow = w / a.k;
          a.dinp[((n * a.H + h) * a.W + w) * C + c] =
              oh < OH && ow < OW ? float(double(a.dout[((n * OH + oh) * OW + ow) * C + c]) / double(a.k * a.k)) : 0.0f;
        }
}

void run(const AttnPoolTokensForwardArgs& a) {
  const int64_t T = a.HW + 1, C = a.C;
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t t = 0; t < a.HW; ++t) {
        s += a.feat[(n * a.HW + t) * C + c];
        a.x[(n * T + 1 + t) * C + c] = a.feat[(n * a.HW + t) * C + c] + a.pos[(1 + t) * C + c];
      }
      a.x[n * T * C + c] = float(s / double(a.HW) + a.pos[c]);
    }
}

void run(const AttnPoolTokensBackwardArgs& a) {
  const int64_t T = a.HW + 1, C = a.C;
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t t = 0; t < a.HW; ++t)
      for (int64_t c = 0; c < C; ++c)
        a.dfeat[(n * a.HW + t) * C + c] =
            float(double(a.dx[(n * T + 1 + t) * C + c]) + double(a.dx[n * T * C + c]) / double(a.HW));
  if (!a.dpos) return;
  for (int64_t j = 0; j < T; ++j)
    for (int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (int64_t n = 0; n < a.N; ++n) s += a.dx[(n * T + j) * C + c];
      a.dpos[j * C + c] += float(s);
    }
}

}  // namespace oc::ops::ref
