// Backend suite cases for the convolution towers (ModifiedResNet): conv2d forward / backward
// data / backward weights (fp32 and bf16-rounded operands), BatchNorm2d in train and eval
// mode, ReLU, average pooling and AttentionPool2d's tokens. Shapes: RN50's stem and a
// Bottleneck's convs at a reduced spatial size, and odd ones (channel counts that are not
// multiples of a vector, sizes that strided windows do not tile).
#include <string>

#include "backend_cases.h"
#include "ops/conv.h"

namespace oc::ops::test {

namespace {

struct ConvShapeCase {
  std::string name;
  ConvShape shape;
  bool big;
};

void conv_cases(std::vector<OpCase>& v) {
  const ConvShapeCase shapes[] = {{"stem", {2, 32, 32, 3, 16, 3, 2, 1}, true},
                                  {"bottleneck3x3", {2, 14, 14, 64, 64, 3, 1, 1}, true},
                                  {"pointwise", {2, 7, 7, 128, 256, 1, 1, 0}, true},
                                  {"odd", {3, 5, 7, 5, 6, 3, 2, 1}, false}};
  for (const ConvShapeCase& s : shapes)
    for (Prec prec : {Prec::F32, Prec::BF16}) {
      const std::string tag = s.name + (prec == Prec::BF16 ? "_bf16" : "");
      const int64_t in = s.shape.in_size(), wt = s.shape.weight_size(), out = s.shape.out_size();
      // A dot product of K*K*C terms (at most 576 here): kF32 (backend_cases.h). With bf16
      // operands the products are exact in fp32 as in ref, so only the sums differ: kF32 too.
      v.push_back({"conv2d_forward_" + tag,
                   {O(out), I(in), I(wt, Draw::Normal, 0.1)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(Conv2dForwardArgs{.out = p.f(0),
                                             .inp = p.f(1),
                                             .weight = p.f(2),
                                             .shape = s.shape,
                                             .prec = prec});
                     return 0.0;
                   },
                   kF32,
                   kF32,
                   !s.big,
                   /*nonfinite_may_spread_from=*/2});
      v.push_back({"conv2d_backward_data_" + tag,
                   {O(in), I(out), I(wt, Draw::Normal, 0.1)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(Conv2dBackwardDataArgs{.dinp = p.f(0),
                                                  .dout = p.f(1),
                                                  .weight = p.f(2),
                                                  .shape = s.shape,
                                                  .prec = prec});
                     return 0.0;
                   },
                   kF32,
                   kF32,
                   !s.big,
                   /*nonfinite_may_spread_from=*/2});
      // dweight: a sum over N*OH*OW positions (392 .. 1568 terms here): kF32.
      v.push_back({"conv2d_backward_weights_" + tag,
                   {IO(wt), I(out), I(in)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(Conv2dBackwardWeightsArgs{.dweight = p.f(0),
                                                     .dout = p.f(1),
                                                     .inp = p.f(2),
                                                     .shape = s.shape,
                                                     .prec = prec});
                     return 0.0;
                   },
                   kF32,
                   kF32,
                   !s.big});
      // The inference epilogue (ModifiedResNet's folded BatchNorm): bias, the residual read from
      // a separate map or from `out` itself (IO: the identity the downsample conv wrote there),
      // then ReLU. One more fp32 add per output than the plain forward and a max: kF32.
      for (bool in_place : {false, true})
        v.push_back({"conv2d_forward_bias_residual_relu_" + tag + (in_place ? "_inplace" : ""),
                     {in_place ? IO(out) : O(out), I(in), I(wt, Draw::Normal, 0.1), I(s.shape.OC), I(out)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(Conv2dForwardArgs{.out = p.f(0),
                                               .inp = p.f(1),
                                               .weight = p.f(2),
                                               .shape = s.shape,
                                               .prec = prec,
                                               .bias = p.f(3),
                                               .residual = in_place ? p.f(0) : p.f(4),
                                               .relu = true});
                       return 0.0;
                     },
                     kF32,
                     kF32,
                     !s.big,
                     /*nonfinite_may_spread_from=*/2});
    }
}

// BatchNorm over R rows of C channels. The statistics are double sums on every backend; the
// outputs differ from ref by the float normalisation alone (a few ulp): kF32.
void batchnorm_cases(std::vector<OpCase>& v) {
  struct S {
    std::string name;
    int64_t R, C;
    bool big;
  };
  for (const S& s : {S{"block", 2 * 14 * 14, 64, true}, S{"odd", 3 * 5 * 7, 6, false}})
    for (bool training : {true, false}) {
      const std::string tag = s.name + (training ? "_train" : "_eval");
      const int64_t n = s.R * s.C;
      v.push_back({"batchnorm_forward_" + tag,
                   {O(n), O(s.C), O(s.C), IO(s.C), IO(s.C, Draw::Positive), I(n, Draw::Normal, 2.0), I(s.C), I(s.C)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(BatchNormForwardArgs{.out = p.f(0),
                                                .mean = p.f(1),
                                                .rstd = p.f(2),
                                                .running_mean = p.f(3),
                                                .running_var = p.f(4),
                                                .inp = p.f(5),
                                                .weight = p.f(6),
                                                .bias = p.f(7),
                                                .R = s.R,
                                                .C = s.C,
                                                .eps = 1e-5,
                                                .momentum = 0.1,
                                                .training = training});
                     return 0.0;
                   },
                   kF32,
                   kF32,
                   !s.big});
      v.push_back({"batchnorm_backward_" + tag,
                   {O(n), IO(s.C), IO(s.C), I(n), I(n), I(s.C), I(s.C), I(s.C, Draw::Positive)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(BatchNormBackwardArgs{.dinp = p.f(0),
                                                 .dweight = p.f(1),
                                                 .dbias = p.f(2),
                                                 .dout = p.f(3),
                                                 .inp = p.f(4),
                                                 .weight = p.f(5),
                                                 .mean = p.f(6),
                                                 .rstd = p.f(7),
                                                 .R = s.R,
                                                 .C = s.C,
                                                 .training = training});
                     return 0.0;
                   },
                   kF32,
                   kF32,
                   !s.big});
    }
}

void pool_relu_cases(std::vector<OpCase>& v) {
  struct P {
    std::string name;
    int64_t N, H, W, C, k;
    bool big;
  };
  for (const P& s : {P{"stem", 2, 28, 28, 64, 2, true}, P{"odd", 3, 7, 5, 6, 3, false}}) {
    const int64_t in = s.N * s.H * s.W * s.C, out = s.N * (s.H / s.k) * (s.W / s.k) * s.C;
    v.push_back(
        {"avg_pool_forward_" + s.name,
         {O(out), I(in)},
         [=](Backend& b, const Ptrs& p, float*) {
           b.run(AvgPoolForwardArgs{.out = p.f(0), .inp = p.f(1), .N = s.N, .H = s.H, .W = s.W, .C = s.C, .k = s.k});
           return 0.0;
         },
         kF32,
         kF32,
         !s.big});  // k*k terms
    v.push_back(
        {"avg_pool_backward_" + s.name,
         {O(in), I(out)},
         [=](Backend& b, const Ptrs& p, float*) {
           b.run(AvgPoolBackwardArgs{.dinp = p.f(0), .dout = p.f(1), .N = s.N, .H = s.H, .W = s.W, .C = s.C, .k = s.k});
           return 0.0;
         },
         kF32,
         kF32,
         !s.big});
  }
  struct T {
    std::string name;
    int64_t N, HW, C;
    bool big;
  };
  for (const T& s : {T{"rn50", 2, 49, 256, true}, T{"odd", 3, 5, 7, false}}) {
    const int64_t x = s.N * (s.HW + 1) * s.C;
    v.push_back(
        {"attnpool_tokens_forward_" + s.name,
         {O(x), I(s.N * s.HW * s.C), I((s.HW + 1) * s.C)},
         [=](Backend& b, const Ptrs& p, float*) {
           b.run(AttnPoolTokensForwardArgs{.x = p.f(0), .feat = p.f(1), .pos = p.f(2), .N = s.N, .HW = s.HW, .C = s.C});
           return 0.0;
         },
         kF32,
         kF32,
         !s.big});  // the mean: HW terms
    v.push_back({"attnpool_tokens_backward_" + s.name,
                 {O(s.N * s.HW * s.C), IO((s.HW + 1) * s.C), I(x)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(AttnPoolTokensBackwardArgs{
                       .dfeat = p.f(0), .dpos = p.f(1), .dx = p.f(2), .N = s.N, .HW = s.HW, .C = s.C});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !s.big});
  }
  for (int64_t n : {int64_t(100000), int64_t(37)}) {
    const bool big = n > 1000;
    const std::string tag = big ? "big" : "odd";
    v.push_back({"relu_forward_" + tag,
                 {O(n), I(n)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(ReluForwardArgs{.out = p.f(0), .inp = p.f(1), .n = n});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !big});  // a select: exact
    v.push_back({"relu_forward_inplace_" + tag,
                 {IO(n)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(ReluForwardArgs{.out = p.f(0), .inp = p.f(0), .n = n});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !big});
    v.push_back({"relu_backward_" + tag,
                 {O(n), I(n), I(n)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(ReluBackwardArgs{.dinp = p.f(0), .dout = p.f(1), .out = p.f(2), .n = n});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !big});
  }
}

}  // namespace

void convnet_cases(std::vector<OpCase>& v) {
  conv_cases(v);
  batchnorm_cases(v);
  pool_relu_cases(v);
}

}  // namespace oc::ops::test
