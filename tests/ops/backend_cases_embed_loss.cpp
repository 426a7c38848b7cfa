// Backend suite cases: the embeddings, row gathers and losses. Tolerances kF32 / kB16:
// backend_cases.h.
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
    // uint8 HWC pixels: the bytes of random floats (every byte value occurs).
    const int64_t px_bytes = g.B * g.S * g.S * 3;
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f}, std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    v.push_back({"normalize_images_" + g.name,
                 {O(g.B * 3 * g.S * g.S), I((px_bytes + 3) / 4)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(NormalizeImagesArgs{.out = p.f(0), .px = static_cast<const uint8_t*>(p.p[1]), .mean = mean,
                                             .std = std, .B = g.B, .S = g.S});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !g.big});  // the contract's fp32 expression, IEEE-rounded: exact
    v.push_back({"im2patches_" + g.name,
                 {O(g.B * Np * K), I(g.B * 3 * g.S * g.S)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(Im2PatchesArgs{.patches = p.f(0), .img = p.f(1), .B = g.B, .S = g.S, .P = g.P});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !g.big});  // a copy: exact
    v.push_back({"vit_embed_forward_" + g.name,
                 {O(g.B * T * g.W), I(g.B * Np * g.W), I(g.W), I(T * g.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(VitEmbedForwardArgs{.x = p.f(0), .patch_out = p.f(1), .cls = p.f(2), .pos = p.f(3), .B = g.B,
                                             .Np = Np, .C = g.W});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !g.big});  // one float add per element: exact
    v.push_back(
        {"vit_embed_backward_" + g.name,
         {O(g.B * Np * g.W), IO(g.W), IO(T * g.W), I(g.B * T * g.W)},
         [=](Backend& b, const Ptrs& p, float*) {
           b.run(VitEmbedBackwardArgs{.dpatch_out = p.f(0), .dcls = p.f(1), .dpos = p.f(2), .dx = p.f(3), .B = g.B,
                                      .Np = Np, .C = g.W});
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
                   b.run(TokenEmbedForwardArgs{.x = p.f(0), .tokens = {tok->data(), size_t(t.B * t.T)}, .wte = p.f(1),
                                               .wpe = p.f(2), .B = t.B, .Tn = t.T, .C = t.W, .V = t.V});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !t.big});
    v.push_back({"token_embed_backward_" + t.name,
                 {IO(t.V * t.W), IO(t.T * t.W), I(t.B * t.T * t.W)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(TokenEmbedBackwardArgs{.dwte = p.f(0), .dwpe = p.f(1), .dx = p.f(2),
                                                .tokens = {tok->data(), size_t(t.B * t.T)}, .B = t.B, .Tn = t.T,
                                                .C = t.W, .V = t.V});
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
                   b.run(GatherRowsForwardArgs{.out = p.f(0), .inp = p.f(1), .idx = {idx->data(), size_t(t.B)},
                                               .B = t.B, .Tn = t.T, .C = t.W});
                   return 0.0;
                 },
                 0.0,
                 0.0,
                 !t.big});
    v.push_back(
        {"gather_rows_backward_" + t.name,
         {IO(t.B * t.T * t.W), I(t.B * t.W)},
         [=](Backend& b, const Ptrs& p, float*) {
           b.run(GatherRowsBackwardArgs{.dinp = p.f(0), .dout = p.f(1), .idx = {idx->data(), size_t(t.B)}, .B = t.B,
                                        .Tn = t.T, .C = t.W});
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
                   b.run(L2NormForwardArgs{.out = p.f(0), .norm = p.f(1), .inp = p.f(2), .N = N, .C = E});
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 E != 512});
    v.push_back(
        {"l2norm_backward_E" + std::to_string(E),
         {O(N * E), I(N * E), I(N * E), I(N, Draw::Positive)},
         [=](Backend& b, const Ptrs& p, float*) {
           b.run(L2NormBackwardArgs{.dinp = p.f(0), .dout = p.f(1), .out = p.f(2), .norm = p.f(3), .N = N, .C = E});
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
                   return b.run(ClipLossArgs{.dimg = p.f(0), .dtxt = p.f(1), .dimg_all = p.f(2), .dtxt_all = p.f(3),
                                             .dscale_log = {host}, .scratch = p.f(4), .img = p.f(5), .txt = p.f(6),
                                             .img_all = p.f(7), .txt_all = p.f(8), .scale = 14.3f, .Nl = l.Nl,
                                             .Na = l.Na, .E = l.E, .label_offset = l.off});
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
                   return b.run(SiglipLossArgs{.dimg = p.f(0), .dtxt = p.f(1), .dscale_log = {host},
                                               .dbias = {host + 1}, .img = p.f(2), .txt = p.f(3), .scale = 10.0f,
                                               .bias = -10.0f, .B = B, .M = M, .E = E, .positives = pos});
                 },
                 kF32,
                 kB16,
                 !pos});
  }
}

}  // namespace

void embed_loss_cases(std::vector<OpCase>& v) {
  embed_cases(v);
  loss_cases(v);
}

}  // namespace oc::ops::test
