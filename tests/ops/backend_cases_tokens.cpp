// Backend suite cases for OpenCLIP's tower options (ops/tokens.h): LayerScale, the mean over
// patch tokens (pool_type avg) and PatchDropout's token gather. Shapes: ViT-B-32's vision
// tower (50 tokens, width 768; 25 kept of 49 patches) and odd ones.
#include <memory>
#include <string>

#include "backend_cases.h"

namespace oc::ops::test {

namespace {

struct Shape {
  std::string name;
  int64_t B, T, C, K;  // batch, tokens, width, tokens kept by the gather
  bool big;
};

}  // namespace

void token_cases(std::vector<OpCase>& v) {
  for (const Shape& s : {Shape{"vit", 2, 50, 768, 26, true}, Shape{"odd", 3, 13, 20, 5, false}}) {
    const int64_t N = s.B * s.T;
    v.push_back({"layer_scale_forward_" + s.name,
                 {IO(N * s.C), I(s.C, Draw::Unit, 0.1)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(LayerScaleForwardArgs{.x = p.f(0), .gamma = p.f(1), .N = N, .C = s.C});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !s.big});  // one product per element: exact
    v.push_back({"layer_scale_backward_" + s.name,
                 {IO(s.C), IO(N * s.C), I(N * s.C), I(s.C, Draw::Unit, 0.1)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(LayerScaleBackwardArgs{.dgamma = p.f(0), .o_dx = p.f(1), .dy = p.f(2), .gamma = p.f(3), .N = N,
                                                .C = s.C});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !s.big});                            // dgamma: a sum over N rows
    for (int64_t first : {int64_t(0), int64_t(1)}) {  // all tokens; the patches after the class token
      const std::string tag = s.name + "_from" + std::to_string(first);
      v.push_back(
          {"mean_tokens_forward_" + tag,
           {O(s.B * s.C), I(N * s.C)},
           [=](Backend& b, const Ptrs& p, float*) {
             b.run(MeanTokensForwardArgs{.out = p.f(0), .inp = p.f(1), .B = s.B, .Tn = s.T, .first = first, .C = s.C});
             return 0.0;
           },
           kF32,
           kF32,
           !s.big});
      v.push_back({"mean_tokens_backward_" + tag,
                   {IO(N * s.C), I(s.B * s.C)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(MeanTokensBackwardArgs{.dinp = p.f(0), .dout = p.f(1), .B = s.B, .Tn = s.T, .first = first,
                                                  .C = s.C});
                     return 0.0;
                   },
                   kF32,
                   kF32,
                   !s.big});
    }
    // Kept token indices per sample: the class token first, then distinct patches out of order (5 is coprime with 49 and 12).
    auto idx = std::make_shared<std::vector<int32_t>>();
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t k = 0; k < s.K; ++k) idx->push_back(k == 0 ? 0 : int32_t(1 + (k * 5 + b) % (s.T - 1)));
    v.push_back({"gather_tokens_forward_" + s.name,
                 {O(s.B * s.K * s.C), I(N * s.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(GatherTokensForwardArgs{.out = p.f(0), .inp = p.f(1), .idx = {idx->data(), size_t(s.B * s.K)},
                                                 .B = s.B, .Tn = s.T, .K = s.K, .C = s.C});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !s.big});  // a copy: exact
    v.push_back({"gather_tokens_backward_" + s.name,
                 {IO(N * s.C), I(s.B * s.K * s.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(GatherTokensBackwardArgs{.dinp = p.f(0), .dout = p.f(1),
                                                  .idx = {idx->data(), size_t(s.B * s.K)}, .B = s.B, .Tn = s.T,
                                                  .K = s.K, .C = s.C});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !s.big});  // one add per element (indices distinct per sample): exact
  }
}

}  // namespace oc::ops::test
