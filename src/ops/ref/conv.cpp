// Reference 2-D convolution (ops/conv.h): one loop nest per op over the definition, sums in
// double; Prec::BF16 rounds inp/dout and weight to bf16 values first (the products of bf16
// values are exact in double, so only the final rounding to float remains).
#include <vector>

#include "ops/conv_index.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {
namespace {


double val(float v, Prec p) { return p == Prec::BF16 ? double(round_bf16(v)) : double(v); }

}  // namespace

void run(const Conv2dForwardArgs& a) {
  const ConvShape& s = a.shape;
  const ConvIndex g{s};
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH(); ++oh)
      for (int64_t ow = 0; ow < s.OW(); ++ow)
        for (int64_t o = 0; o < s.OC; ++o) {
          double sum = a.bias ? double(a.bias[o]) : 0.0;
          for (int64_t i = 0; i < s.K; ++i)
            for (int64_t j = 0; j < s.K; ++j) {
              const int64_t h = g.in(oh, i), w = g.in(ow, j);
              if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
              for (int64_t c = 0; c < s.C; ++c)
                sum += val(a.inp[g.x(n, h, w, c)], a.prec) * val(a.weight[g.w(o, c, i, j)], a.prec);
            }
          const int64_t y = g.y(n, oh, ow, o);
          if (a.residual) sum += double(a.residual[y]);  // read before out[y] is written (may alias)
          if (a.relu && sum < 0.0) sum = 0.0;             // NaN stays NaN, as max(x, 0) in fp32
          a.out[y] = float(sum);
        }
}

void run(const Conv2dBackwardDataArgs& a) {
  const ConvShape& s = a.shape;
  const ConvIndex g{s};
  std::vector<double> acc(size_t(s.N * s.H * s.W * s.C), 0.0);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH(); ++oh)
      for (int64_t ow = 0; ow < s.OW(); ++ow)
        for (int64_t i = 0; i < s.K; ++i)
          for (int64_t j = 0; j < s.K; ++j) {
            const int64_t h = g.in(oh, i), w = g.in(ow, j);
            if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
            for (int64_t c = 0; c < s.C; ++c)
              for (int64_t o = 0; o < s.OC; ++o)
                acc[size_t(g.x(n, h, w, c))] +=
                    val(a.dout[g.y(n, oh, ow, o)], a.prec) * val(a.weight[g.w(o, c, i, j)], a.prec);
          }
  for (size_t e = 0; e < acc.size(); ++e) a.dinp[e] = float(acc[e]);
}

void run(const Conv2dBackwardWeightsArgs& a) {
  const ConvShape& s = a.shape;
  const ConvIndex g{s};
  for (int64_t o = 0; o < s.OC; ++o)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t i = 0; i < s.K; ++i)
        for (int64_t j = 0; j < s.K; ++j) {
          double sum = 0;
          for (int64_t n = 0; n < s.N; ++n)
            for (int64_t oh = 0; oh < s.OH(); ++oh)
              for (int64_t ow = 0; ow < s.OW(); ++ow) {
                const int64_t h = g.in(oh, i), w = g.in(ow, j);
                if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
                sum += val(a.dout[g.y(n, oh, ow, o)], a.prec) * val(a.inp[g.x(n, h, w, c)], a.prec);
              }
          a.dweight[g.w(o, c, i, j)] += float(sum);
        }
  if (!a.dbias) return;
  for (int64_t o = 0; o < s.OC; ++o) {
    double sum = 0;
    for (int64_t r = 0; r < s.N * s.OH() * s.OW(); ++r) sum += double(a.dout[r * s.OC + o]);
    a.dbias[o] += float(sum);
  }
}

}  // namespace oc::ops::ref
