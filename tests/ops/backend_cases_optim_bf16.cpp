// Backend suite cases: the optimizer, the gradient norm's reductions and the amp_bf16 kernels.
// Tolerances kF32 / kB16: backend_cases.h.
#include <cmath>
#include <memory>
#include <string>

#include "backend_cases.h"

namespace oc::ops::test {

namespace {

void optim_cases(std::vector<OpCase>& v) {
  // Elementwise float arithmetic on both sides: only FMA contraction may differ (1 ulp).
  for (int64_t step : {1, 1000}) {
    const int64_t n = 10007;
    v.push_back({"adamw_step_" + std::to_string(step),
                 {IO(n), I(n, Draw::Normal, 1e-2), IO(n, Draw::Normal, 1e-3), IO(n, Draw::Positive, 1e-5)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(AdamWStepArgs{.p = p.f(0), .g = p.f(1), .m = p.f(2), .v = p.f(3), .n = n, .lr = 5e-4f,
                                       .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-6f, .wd = 0.2f, .step = step});
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 true});
  }
  const int64_t n = 40000;
  const std::vector<AdamWSpan> spans = {{0, 7, 0.0f}, {16, 20000, 0.2f}, {20016, 13, 0.0f}, {20100, 19900, 0.1f}};
  v.push_back({"adamw_step_spans",
               {IO(n), I(n, Draw::Normal, 1e-2), IO(n, Draw::Normal, 1e-3), IO(n, Draw::Positive, 1e-5)},
               [=](Backend& b, const Ptrs& p, float*) {
                 b.run(AdamWStepSpansArgs{.p = p.f(0), .g = p.f(1), .m = p.f(2), .v = p.f(3), .spans = spans,
                                          .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.98f, .eps = 1e-6f, .step = 7});
                 return 0.0;
               },
               kF32,
               kB16,
               true});
  for (int64_t m : {int64_t(1), int64_t(77), int64_t(100003)}) {
    v.push_back({"sum_squares_" + std::to_string(m),
                 {I(m)},
                 [=](Backend& b, const Ptrs& p, float*) { return b.run(SumSquaresArgs{.x = p.f(0), .n = m}); },
                 kF32,
                 kB16,
                 m < 100});
    v.push_back({"scale_inplace_" + std::to_string(m),
                 {IO(m)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(ScaleInplaceArgs{.x = p.f(0), .n = m, .s = 0.37f});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 m < 100});  // one float multiply: exact
    v.push_back(
        {"all_finite_" + std::to_string(m),
         {I(m)},
         [=](Backend& b, const Ptrs& p, float*) { return b.run(AllFiniteArgs{.x = p.f(0), .n = m}) ? 1.0 : 0.0; },
         0.0,
         0.0,
         m < 100});
  }
}

void bf16_cases(std::vector<OpCase>& v) {
  struct G {
    std::string name;
    int64_t M, N, K;
  };
  for (const G& g : {G{"vit_fc", 100, 3072, 768}, G{"odd", 13, 37, 50}, G{"one", 1, 24, 40}})
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      if (g.name == "vit_fc" && t != 2) continue;  // the layout the model uses; the others on odd shapes
      const int64_t lda = (ta ? g.M : g.K) + 1, ldb = (tb ? g.K : g.N) + 3, ldc = g.N + 5;
      const int64_t na = (ta ? g.K : g.M) * lda, nb = (tb ? g.N : g.K) * ldb;
      const std::string tag = g.name + "_" + (ta ? "T" : "N") + (tb ? "T" : "N");
      for (int epi = 0; epi < 5; ++epi) {  // none, bias, bias+gelu, +quickgelu, +gelu tanh (+ beta for fp32 out)
        auto mk = [=](const float* bias, bool f32_out) {
          Epilogue e;
          e.bias = epi > 0 ? bias : nullptr;
          e.act = epi >= 2;
          e.act_fn = epi == 3 ? Act::QuickGelu : epi == 4 ? Act::GeluTanh : Act::Gelu;
          e.beta = f32_out && epi == 1 ? 1.0f : 0.0f;
          return e;
        };
        v.push_back({"gemm_bf16_f32out_" + tag + "_epi" + std::to_string(epi),
                     {I16(na), I16(nb), I(g.N), epi == 1 ? IO(g.M * ldc) : O(g.M * ldc)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(GemmBf16Args{.ta = ta, .tb = tb, .M = g.M, .N = g.N, .K = g.K, .A = p.h(0), .lda = lda,
                                          .B = p.h(1), .ldb = ldb, .C = p.f(3), .ldc = ldc, .e = mk(p.f(2), true)});
                       return 0.0;
                     },
                     kF32,
                     kB16,
                     g.name != "vit_fc"});
        v.push_back({"gemm_bf16_bf16out_" + tag + "_epi" + std::to_string(epi),
                     {I16(na), I16(nb), I(g.N), O16(g.M * ldc)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(GemmBf16ToBf16Args{.ta = ta, .tb = tb, .M = g.M, .N = g.N, .K = g.K, .A = p.h(0),
                                                .lda = lda, .B = p.h(1), .ldb = ldb, .C = p.h(3), .ldc = ldc,
                                                .e = mk(p.f(2), false)});
                       return 0.0;
                     },
                     kF32,
                     kB16,
                     g.name != "vit_fc"});
      }
    }
  struct D {
    std::string name;
    int64_t M, C, F;
    bool big;
  };
  for (const D& d : {D{"vit", 100, 768, 3072, true}, D{"odd", 39, 40, 72, false}, D{"one", 1, 24, 40, false}}) {
    const bool small = !d.big;
    v.push_back({"cast_to_bf16_" + d.name,
                 {O16(d.M * d.C), I(d.M * d.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(CastToBf16Args{.dst = p.h(0), .src = p.f(1), .n = d.M * d.C});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 small});  // round to nearest even: exact
    v.push_back({"round_to_bf16_" + d.name,
                 {IO(d.M * d.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(RoundToBf16Args{.x = p.f(0), .n = d.M * d.C});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 small});  // round to nearest even, kept in fp32: exact
    v.push_back({"layernorm_forward_bf16_" + d.name,
                 {O16(d.M * d.C), O(d.M), O(d.M), I(d.M * d.C, Draw::Normal, 3.0), I(d.C), I(d.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(LayerNormForwardBf16Args{.out = p.h(0), .mean = p.f(1), .rstd = p.f(2), .inp = p.f(3),
                                                  .weight = p.f(4), .bias = p.f(5), .N = d.M, .C = d.C, .eps = 1e-5});
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 small});
    v.push_back({"add_layernorm_forward_bf16_" + d.name,
                 {IO(d.M * d.C), O16(d.M * d.C), O(d.M), O(d.M), I(d.M * d.C), I(d.C), I(d.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(AddLayerNormForwardBf16Args{.xm = p.f(0), .out = p.h(1), .mean = p.f(2), .rstd = p.f(3),
                                                     .x = p.f(4), .weight = p.f(5), .bias = p.f(6), .N = d.M, .C = d.C,
                                                     .eps = 1e-5});
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 small});
    for (Act act : {Act::Gelu, Act::QuickGelu, Act::GeluTanh}) {
      const std::string tag = d.name + (act == Act::Gelu        ? "_gelu"
                                        : act == Act::QuickGelu ? "_quickgelu"
                                                                : "_gelutanh");
      const int64_t n = d.M * d.F;
      v.push_back({"act_forward_bf16_" + tag,
                   {O16(n), I(n, Draw::Normal, 3.0)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(ActForwardBf16Args{.out = p.h(0), .inp = p.f(1), .n = n, .act = act});
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   small});
      v.push_back(
          {"act_backward_bf16_" + tag,
           {O16(n), IO(d.F), I(n), I(n, Draw::Normal, 3.0)},
           [=](Backend& b, const Ptrs& p, float*) {
             b.run(ActBackwardBf16Args{.dinp = p.h(0), .dbias = p.f(1), .dout = p.f(2), .inp = p.f(3), .M = d.M,
                                       .N = d.F, .act = act});
             return 0.0;
           },
           kF32,
           kB16,
           small});
      v.push_back({"act_value_grad_bf16_" + tag,
                   {O16(n), O16(n), IO(d.F), I(n), I(n, Draw::Normal, 3.0)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(ActValueGradBf16Args{.act16 = p.h(0), .dh16 = p.h(1), .dbias = p.f(2), .dact = p.f(3),
                                                .h = p.f(4), .M = d.M, .N = d.F, .act = act});
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   small});
    }
    for (bool with_bias : {true, false})
      v.push_back({"bias_grad_to_bf16_" + d.name + (with_bias ? "" : "_nobias"),
                   {O16(d.M * d.C), IO(d.C), I(d.M * d.C)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(BiasGradToBf16Args{.out = p.h(0), .dbias = with_bias ? p.f(1) : nullptr, .dout = p.f(2),
                                              .M = d.M, .N = d.C});
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   small});
  }
}

}  // namespace

void optim_bf16_cases(std::vector<OpCase>& v) {
  optim_cases(v);
  bf16_cases(v);
}

}  // namespace oc::ops::test
