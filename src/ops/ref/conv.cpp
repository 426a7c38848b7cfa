// Reference 2-D convolution (ops/conv.h): one loop nest per op over the definition, sums in
// double; Prec::BF16 rounds inp/dout and weight to bf16 values first (the products of bf16
// values are exact in double, so only the final rounding to float remains).
#include <vector>

#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {
namespace {

struct Geo {
  int64_t N, H, W, C, OC, K, S, P, OH, OW;
  explicit Geo(const ConvShape& s)
      : N(s.N), H(s.H), W(s.W), C(s.C), OC(s.OC), K(s.K), S(s.stride), P(s.pad), OH(s.OH()), OW(s.OW()) {}
  int64_t x(int64_t n, int64_t h, int64_t w, int64_t c) const { return ((n * H + h) * W + w) * C + c; }
  int64_t y(int64_t n, int64_t oh, int64_t ow, int64_t o) const { return ((n * OH + oh) * OW + ow) * OC + o; }
  int64_t wt(int64_t o, int64_t c, int64_t i, int64_t j) const { return ((o * C + c) * K + i) * K + j; }
  // The input row/column that kernel tap i of output position oh reads (may be outside).
  int64_t in(int64_t o, int64_t i) const { return o * S - P + i; }
};

double val(float v, Prec p) { return p == Prec::BF16 ? double(round_bf16(v)) : double(v); }

}  // namespace

void run(const Conv2dForwardArgs& a) {
  const Geo g(a.shape);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow)
        for (int64_t o = 0; o < g.OC; ++o) {
          double s = 0;
          for (int64_t i = 0; i < g.K; ++i)
            for (int64_t j = 0; j < g.K; ++j) {
              const int64_t h = g.in(oh, i), w = g.in(ow, j);
              if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
              for (int64_t c = 0; c < g.C; ++c)
                s += val(a.inp[g.x(n, h, w, c)], a.prec) * val(a.weight[g.wt(o, c, i, j)], a.prec);
            }
          a.out[g.y(n, oh, ow, o)] = float(s);
        }
}

void run(const Conv2dBackwardDataArgs& a) {
  const Geo g(a.shape);
  std::vector<double> acc(size_t(g.N * g.H * g.W * g.C), 0.0);
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t oh = 0; oh < g.OH; ++oh)
      for (int64_t ow = 0; ow < g.OW; ++ow)
        for (int64_t i = 0; i < g.K; ++i)
          for (int64_t j = 0; j < g.K; ++j) {
            const int64_t h = g.in(oh, i), w = g.in(ow, j);
            if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
            for (int64_t c = 0; c < g.C; ++c)
              for (int64_t o = 0; o < g.OC; ++o)
                acc[size_t(g.x(n, h, w, c))] +=
                    val(a.dout[g.y(n, oh, ow, o)], a.prec) * val(a.weight[g.wt(o, c, i, j)], a.prec);
          }
  for (size_t e = 0; e < acc.size(); ++e) a.dinp[e] = float(acc[e]);
}

void run(const Conv2dBackwardWeightsArgs& a) {
  const Geo g(a.shape);
  for (int64_t o = 0; o < g.OC; ++o)
    for (int64_t c = 0; c < g.C; ++c)
      for (int64_t i = 0; i < g.K; ++i)
        for (int64_t j = 0; j < g.K; ++j) {
          double s = 0;
          for (int64_t n = 0; n < g.N; ++n)
            for (int64_t oh = 0; oh < g.OH; ++oh)
              for (int64_t ow = 0; ow < g.OW; ++ow) {
                const int64_t h = g.in(oh, i), w = g.in(ow, j);
                if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
                s += val(a.dout[g.y(n, oh, ow, o)], a.prec) * val(a.inp[g.x(n, h, w, c)], a.prec);
              }
          a.dweight[g.wt(o, c, i, j)] += float(s);
        }
}

}  // namespace oc::ops::ref
