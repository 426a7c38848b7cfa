// Reference depthwise convolution (ops/dwconv.h): one loop nest per op over the definition,
// sums in double; Prec::BF16 rounds inp/dout and weight to bf16 values first.
#include <vector>

#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {
namespace {

double val(float v, Prec p) { return p == Prec::BF16 ? double(round_bf16(v)) : double(v); }

// Offsets in the [N,H,W,C] input, the [N,OH,OW,C] output and the [C,1,K,K] weight.
struct DwIndex {
  const DwConvShape& s;
  int64_t x(int64_t n, int64_t h, int64_t w, int64_t c) const { return ((n * s.H + h) * s.W + w) * s.C + c; }
  int64_t y(int64_t n, int64_t oh, int64_t ow, int64_t c) const { return ((n * s.OH() + oh) * s.OW() + ow) * s.C + c; }
  int64_t w(int64_t c, int64_t i, int64_t j) const { return (c * s.K + i) * s.K + j; }
  bool inside(int64_t h, int64_t w) const { return h >= 0 && h < s.H && w >= 0 && w < s.W; }
};

}  // namespace

void run(const DwConv2dForwardArgs& a) {
  const DwConvShape& s = a.shape;
  const DwIndex g{s};
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH(); ++oh)
      for (int64_t ow = 0; ow < s.OW(); ++ow)
        for (int64_t c = 0; c < s.C; ++c) {
          double sum = a.bias ? double(a.bias[c]) : 0.0;
          for (int64_t i = 0; i < s.K; ++i)
            for (int64_t j = 0; j < s.K; ++j) {
              const int64_t h = oh - s.pad + i, w = ow - s.pad + j;
              if (g.inside(h, w)) sum += val(a.inp[g.x(n, h, w, c)], a.prec) * val(a.weight[g.w(c, i, j)], a.prec);
            }
          a.out[g.y(n, oh, ow, c)] = float(sum);
        }
}

void run(const DwConv2dBackwardDataArgs& a) {
  const DwConvShape& s = a.shape;
  const DwIndex g{s};
  std::vector<double> acc(size_t(s.in_size()), 0.0);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH(); ++oh)
      for (int64_t ow = 0; ow < s.OW(); ++ow)
        for (int64_t i = 0; i < s.K; ++i)
          for (int64_t j = 0; j < s.K; ++j) {
            const int64_t h = oh - s.pad + i, w = ow - s.pad + j;
            if (!g.inside(h, w)) continue;
            for (int64_t c = 0; c < s.C; ++c)
              acc[size_t(g.x(n, h, w, c))] +=
                  val(a.dout[g.y(n, oh, ow, c)], a.prec) * val(a.weight[g.w(c, i, j)], a.prec);
          }
  for (size_t e = 0; e < acc.size(); ++e) a.dinp[e] = float(acc[e]);
}

void run(const DwConv2dBackwardWeightsArgs& a) {
  const DwConvShape& s = a.shape;
  const DwIndex g{s};
  for (int64_t c = 0; c < s.C; ++c) {
    for (int64_t i = 0; i < s.K; ++i)
      for (int64_t j = 0; j < s.K; ++j) {
        double sum = 0;
        for (int64_t n = 0; n < s.N; ++n)
          for (int64_t oh = 0; oh < s.OH(); ++oh)
            for (int64_t ow = 0; ow < s.OW(); ++ow) {
              const int64_t h = oh - s.pad + i, w = ow - s.pad + j;
              if (g.inside(h, w)) sum += val(a.dout[g.y(n, oh, ow, c)], a.prec) * val(a.inp[g.x(n, h, w, c)], a.prec);
            }
        a.dweight[g.w(c, i, j)] += float(sum);
      }
    if (!a.dbias) continue;
    double sum = 0;  // the bias gradient is fp32 in both precisions: dout as it is
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t oh = 0; oh < s.OH(); ++oh)
        for (int64_t ow = 0; ow < s.OW(); ++ow) sum += double(a.dout[g.y(n, oh, ow, c)]);
    a.dbias[c] += float(sum);
  }
}

}  // namespace oc::ops::ref
