// Backend suite cases for ConvNeXt's ops: the depthwise convolution (forward with and without
// bias, backward data, backward weights with and without the bias gradient; fp32 and
// bf16-rounded operands) and the bias of the dense convolution (the stem and downsample
// convs). Shapes: a ConvNeXt block at a reduced spatial size (7x7, pad 3), and odd ones
// (channel counts that are not multiples of a vector, a kernel larger than the map).
#include <string>

#include "backend_cases.h"
#include "ops/conv.h"
#include "ops/dwconv.h"

namespace oc::ops::test {

namespace {

struct DwCase {
  std::string name;
  DwConvShape shape;
  bool big;
};

void dw_forward_backward_data(std::vector<OpCase>& v, const DwCase& s, Prec prec, const std::string& tag) {
  const int64_t in = s.shape.in_size(), wt = s.shape.weight_size(), out = s.shape.out_size(), C = s.shape.C;
  // A sum of at most K*K = 49 products per output (and the bias): kF32 (backend_cases.h). With
  // bf16 operands the products are exact in fp32 as in ref, so only the sums differ: kF32 too.
  for (bool bias : {true, false})
    v.push_back({"dwconv2d_forward_" + tag + (bias ? "" : "_nobias"),
                 {O(out), I(in), I(wt, Draw::Normal, 0.2), I(C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(DwConv2dForwardArgs{.out = p.f(0),
                                             .inp = p.f(1),
                                             .weight = p.f(2),
                                             .bias = bias ? p.f(3) : nullptr,
                                             .shape = s.shape,
                                             .prec = prec});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !s.big});
  v.push_back({"dwconv2d_backward_data_" + tag,
               {O(in), I(out), I(wt, Draw::Normal, 0.2)},
               [=](Backend& b, const Ptrs& p, float*) {
                 b.run(DwConv2dBackwardDataArgs{
                     .dinp = p.f(0), .dout = p.f(1), .weight = p.f(2), .shape = s.shape, .prec = prec});
                 return 0.0;
               },
               kF32,
               kF32,
               !s.big});
}

void dwconv_cases(std::vector<OpCase>& v) {
  const DwCase shapes[] = {{"block", {2, 14, 14, 96, 7, 3}, true},
                           {"odd", {3, 5, 6, 5, 7, 3}, false},     // the kernel wider than the map
                           {"valid", {2, 6, 5, 3, 3, 0}, false}};  // no padding: a smaller output
  for (const DwCase& s : shapes)
    for (Prec prec : {Prec::F32, Prec::BF16}) {
      const std::string tag = s.name + (prec == Prec::BF16 ? "_bf16" : "");
      dw_forward_backward_data(v, s, prec, tag);
      const int64_t in = s.shape.in_size(), wt = s.shape.weight_size(), out = s.shape.out_size(), C = s.shape.C;
      // dweight, dbias: sums over N*OH*OW positions (at most 392 here): kF32.
      for (bool bias : {true, false})
        v.push_back({"dwconv2d_backward_weights_" + tag + (bias ? "" : "_nobias"),
                     {IO(wt), IO(C), I(out), I(in)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(DwConv2dBackwardWeightsArgs{.dweight = p.f(0),
                                                         .dbias = bias ? p.f(1) : nullptr,
                                                         .dout = p.f(2),
                                                         .inp = p.f(3),
                                                         .shape = s.shape,
                                                         .prec = prec});
                       return 0.0;
                     },
                     kF32,
                     kF32,
                     !s.big});
    }
}

// The dense convolution's bias: ConvNeXt's stem (4x4 / 4) and downsample (2x2 / 2) convs.
void conv_bias_cases(std::vector<OpCase>& v) {
  const ConvShape shapes[] = {{2, 16, 16, 3, 32, 4, 4, 0}, {2, 8, 8, 24, 48, 2, 2, 0}};
  for (const ConvShape& s : shapes) {
    const std::string tag = "k" + std::to_string(s.K);
    const int64_t in = s.in_size(), wt = s.weight_size(), out = s.out_size();
    v.push_back({"conv2d_forward_bias_" + tag,
                 {O(out), I(in), I(wt, Draw::Normal, 0.1), I(s.OC)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(Conv2dForwardArgs{.out = p.f(0), .inp = p.f(1), .weight = p.f(2), .shape = s, .bias = p.f(3)});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 true});
    v.push_back({"conv2d_backward_weights_bias_" + tag,
                 {IO(wt), IO(s.OC), I(out), I(in)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(Conv2dBackwardWeightsArgs{
                       .dweight = p.f(0), .dout = p.f(2), .inp = p.f(3), .shape = s, .dbias = p.f(1)});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 true});
  }
}

}  // namespace

void convnext_cases(std::vector<OpCase>& v) {
  dwconv_cases(v);
  conv_bias_cases(v);
}

}  // namespace oc::ops::test
