// Backend suite cases, continued: embeddings, gathers, losses, the optimizer and the amp_bf16
// kernels. Tolerances kF32 / kB16: backend_cases.h.
#include <cmath>
#include <memory>
#include <string>

#include "backend_cases.h"

namespace oc::ops::test {

namespace {

// Token ids with repeats (the scatter-add order matters) and an end-of-text maximum per row.
std::shared_ptr<std::vector<int32_t>> tokens(int64_t B, int64_t T, int64_t V) {
  auto t = std::make_shared<std::vector<int32_t>>(size_t(B * T));
  for (int64_t i = 0; i < B * T; ++i) (*t)[size_t(i)] = int32_t((i * 7919 + i / 3) % (V / 4));  // ids repeat
  return t;
}

void embed_cases(std::vector<OpCase>& v) {
  struct Img {
    std::string name;
    int64_t B, S, P, W;
    bool big;
  };
  for (const Img& g : {Img{"vit", 2, 224, 32, 768, true}, Img{"odd", 3, 15, 5, 20, false}}) {
    const int64_t G = g.S / g.P, Np = G * G, K = 3 * g.P * g.P, T = Np + 1;
    v.push_back({"im2patches_" + g.name,
                 {O(g.B * Np * K), I(g.B * 3 * g.S * g.S)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.im2patches(p.f(0), p.f(1), g.B, g.S, g.P);
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !g.big});  // a copy: exact
    v.push_back({"vit_embed_forward_" + g.name,
                 {O(g.B * T * g.W), I(g.B * Np * g.W), I(g.W), I(T * g.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.vit_embed_forward(p.f(0), p.f(1), p.f(2), p.f(3), g.B, Np, g.W);
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !g.big});  // one float add per element: exact
    v.push_back({"vit_embed_backward_" + g.name,
                 {O(g.B * Np * g.W), IO(g.W), IO(T * g.W), I(g.B * T * g.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.vit_embed_backward(p.f(0), p.f(1), p.f(2), p.f(3), g.B, Np, g.W);
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 !g.big});
  }
  struct Txt {
    std::string name;
    int64_t B, T, W, V;
    bool big;
  };
  for (const Txt& t : {Txt{"text", 2, 77, 512, 1000, true}, Txt{"odd", 3, 5, 20, 40, false}}) {
    auto tok = tokens(t.B, t.T, t.V);
    v.push_back({"token_embed_forward_" + t.name,
                 {O(t.B * t.T * t.W), I(t.V * t.W), I(t.T * t.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.token_embed_forward(p.f(0), tok->data(), p.f(1), p.f(2), t.B, t.T, t.W, t.V);
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !t.big});
    v.push_back({"token_embed_backward_" + t.name,
                 {IO(t.V * t.W), IO(t.T * t.W), I(t.B * t.T * t.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.token_embed_backward(p.f(0), p.f(1), p.f(2), tok->data(), t.B, t.T, t.W, t.V);
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 !t.big});
    auto idx = std::make_shared<std::vector<int32_t>>();
    for (int64_t b = 0; b < t.B; ++b) idx->push_back(int32_t((b * 5 + 2) % t.T));
    v.push_back({"gather_rows_forward_" + t.name,
                 {O(t.B * t.W), I(t.B * t.T * t.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.gather_rows_forward(p.f(0), p.f(1), idx->data(), t.B, t.T, t.W);
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !t.big});
    v.push_back({"gather_rows_backward_" + t.name,
                 {IO(t.B * t.T * t.W), I(t.B * t.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.gather_rows_backward(p.f(0), p.f(1), idx->data(), t.B, t.T, t.W);
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !t.big});  // one add per element: exact
  }
}

void loss_cases(std::vector<OpCase>& v) {
  for (int64_t E : {512, 37}) {
    const int64_t N = E == 512 ? 8 : 3;
    v.push_back({"l2norm_forward_E" + std::to_string(E),
                 {O(N * E), O(N), I(N * E)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.l2norm_forward(p.f(0), p.f(1), p.f(2), N, E);
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 E != 512});
    v.push_back({"l2norm_backward_E" + std::to_string(E),
                 {O(N * E), I(N * E), I(N * E), I(N, Draw::Positive)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.l2norm_backward(p.f(0), p.f(1), p.f(2), p.f(3), N, E);
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 E != 512});
  }
  // Single process (Nl = Na, offset 0) and one rank of three (3 local rows of 9, offset 3).
  struct L {
    std::string name;
    int64_t Nl, Na, E, off;
  };
  for (const L& l : {L{"single", 8, 8, 512, 0}, L{"rank1of3", 3, 9, 37, 3}}) {
    const double s = 1.0 / std::sqrt(double(l.E));  // dots of O(1), as normalized features give
    v.push_back({"clip_loss_" + l.name,
                 {O(l.Nl * l.E), O(l.Nl * l.E), O(l.Na * l.E), O(l.Na * l.E), Scratch(2 * l.Nl * l.Na),
                  I(l.Nl * l.E, Draw::Normal, s), I(l.Nl * l.E, Draw::Normal, s), I(l.Na * l.E, Draw::Normal, s),
                  I(l.Na * l.E, Draw::Normal, s)},
                 [=](Backend& b, const Ptrs& p, float* host) {
                   return b.clip_loss_forward_backward(p.f(0), p.f(1), p.f(2), p.f(3), host, p.f(4), p.f(5), p.f(6),
                                                       p.f(7), p.f(8), 14.3f, l.Nl, l.Na, l.E, l.off);
                 },
                 kF32,
                 kB16,
                 l.E != 512});
  }
  for (bool pos : {true, false}) {
    const int64_t B = 5, M = pos ? 5 : 7, E = pos ? 512 : 33;
    const double s = 1.0 / std::sqrt(double(E));
    v.push_back({std::string("siglip_loss_") + (pos ? "positives" : "negatives"),
                 {IO(B * E), O(M * E), I(B * E, Draw::Normal, s), I(M * E, Draw::Normal, s)},
                 [=](Backend& b, const Ptrs& p, float* host) {
                   return b.siglip_loss_forward_backward(p.f(0), p.f(1), host, host + 1, p.f(2), p.f(3), 10.0f, -10.0f,
                                                         B, M, E, pos);
                 },
                 kF32,
                 kB16,
                 !pos});
  }
}

void optim_cases(std::vector<OpCase>& v) {
  // Elementwise float arithmetic on both sides: only FMA contraction may differ (1 ulp).
  for (int64_t step : {1, 1000}) {
    const int64_t n = 10007;
    v.push_back({"adamw_step_" + std::to_string(step),
                 {IO(n), I(n, Draw::Normal, 1e-2), IO(n, Draw::Normal, 1e-3), IO(n, Draw::Positive, 1e-5)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.adamw_step(p.f(0), p.f(1), p.f(2), p.f(3), n, 5e-4f, 0.9f, 0.98f, 1e-6f, 0.2f, step);
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
                 b.adamw_step_spans(p.f(0), p.f(1), p.f(2), p.f(3), spans, 1e-3f, 0.9f, 0.98f, 1e-6f, 7);
                 return 0.0;
               },
               kF32,
               kB16,
               true});
  for (int64_t m : {int64_t(1), int64_t(77), int64_t(100003)}) {
    v.push_back({"sum_squares_" + std::to_string(m),
                 {I(m)},
                 [=](Backend& b, const Ptrs& p, float*) { return b.sum_squares(p.f(0), m); },
                 kF32,
                 kB16,
                 m < 100});
    v.push_back({"scale_inplace_" + std::to_string(m),
                 {IO(m)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.scale_inplace(p.f(0), m, 0.37f);
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 m < 100});  // one float multiply: exact
    v.push_back({"all_finite_" + std::to_string(m),
                 {I(m)},
                 [=](Backend& b, const Ptrs& p, float*) { return b.all_finite(p.f(0), m) ? 1.0 : 0.0; },
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
      for (int epi = 0; epi < 4; ++epi) {  // none, bias, bias+gelu, bias+quickgelu (+ beta for fp32 out)
        auto mk = [=](const float* bias, bool f32_out) {
          Epilogue e;
          e.bias = epi > 0 ? bias : nullptr;
          e.act = epi >= 2;
          e.act_fn = epi == 3 ? Act::QuickGelu : Act::Gelu;
          e.beta = f32_out && epi == 1 ? 1.0f : 0.0f;
          return e;
        };
        v.push_back({"gemm_bf16_f32out_" + tag + "_epi" + std::to_string(epi),
                     {I16(na), I16(nb), I(g.N), epi == 1 ? IO(g.M * ldc) : O(g.M * ldc)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.gemm_bf16(ta, tb, g.M, g.N, g.K, p.h(0), lda, p.h(1), ldb, p.f(3), ldc, mk(p.f(2), true));
                       return 0.0;
                     },
                     kF32,
                     kB16,
                     g.name != "vit_fc"});
        v.push_back({"gemm_bf16_bf16out_" + tag + "_epi" + std::to_string(epi),
                     {I16(na), I16(nb), I(g.N), O16(g.M * ldc)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.gemm_bf16(ta, tb, g.M, g.N, g.K, p.h(0), lda, p.h(1), ldb, p.h(3), ldc, mk(p.f(2), false));
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
                   b.cast_to_bf16(p.h(0), p.f(1), d.M * d.C);
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 small});  // round to nearest even: exact
    v.push_back({"layernorm_forward_bf16_" + d.name,
                 {O16(d.M * d.C), O(d.M), O(d.M), I(d.M * d.C, Draw::Normal, 3.0), I(d.C), I(d.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.layernorm_forward_bf16(p.h(0), p.f(1), p.f(2), p.f(3), p.f(4), p.f(5), d.M, d.C, 1e-5);
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 small});
    v.push_back({"add_layernorm_forward_bf16_" + d.name,
                 {IO(d.M * d.C), O16(d.M * d.C), O(d.M), O(d.M), I(d.M * d.C), I(d.C), I(d.C)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.add_layernorm_forward_bf16(p.f(0), p.h(1), p.f(2), p.f(3), p.f(4), p.f(5), p.f(6), d.M, d.C, 1e-5);
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 small});
    for (Act act : {Act::Gelu, Act::QuickGelu}) {
      const std::string tag = d.name + (act == Act::Gelu ? "_gelu" : "_quickgelu");
      const int64_t n = d.M * d.F;
      v.push_back({"act_forward_bf16_" + tag,
                   {O16(n), I(n, Draw::Normal, 3.0)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.act_forward_bf16(p.h(0), p.f(1), n, act);
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   small});
      v.push_back({"act_backward_bf16_" + tag,
                   {O16(n), IO(d.F), I(n), I(n, Draw::Normal, 3.0)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.act_backward_bf16(p.h(0), p.f(1), p.f(2), p.f(3), d.M, d.F, act);
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   small});
      v.push_back({"act_value_grad_bf16_" + tag,
                   {O16(n), O16(n), IO(d.F), I(n), I(n, Draw::Normal, 3.0)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.act_value_grad_bf16(p.h(0), p.h(1), p.f(2), p.f(3), p.f(4), d.M, d.F, act);
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
                     b.bias_grad_to_bf16(p.h(0), with_bias ? p.f(1) : nullptr, p.f(2), d.M, d.C);
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   small});
  }
}

}  // namespace

void embed_loss_cases(std::vector<OpCase>& v) {
  embed_cases(v);
  loss_cases(v);
}

void optim_bf16_cases(std::vector<OpCase>& v) {
  optim_cases(v);
  bf16_cases(v);
}

}  // namespace oc::ops::test
