// Every Backend op on ViT-B-32 shapes (vision: 50 tokens x 768 wide, 12 heads, MLP 3072;
// text: 77 x 512, 8 heads, MLP 2048; batch 2 so that `ref`'s plain loops stay fast) and odd
// ones (batch 1 and 3, 1, 3 and 13 tokens, widths 20/24/40 and MLP 36/40/72: no multiple of
// 16 anywhere, so vector tails and remainder paths run).
#include "backend_cases.h"

#include <string>

namespace oc::ops::test {

namespace {

struct Dims {
  std::string name;
  int64_t B, T, W, H, F;
  bool big;
};
const std::vector<Dims>& dims() {
  static const std::vector<Dims> d = {
      {"vit", 2, 50, 768, 12, 3072, true}, {"text", 2, 77, 512, 8, 2048, true}, {"odd", 3, 13, 40, 5, 72, false},
      {"one", 1, 1, 24, 3, 40, false},     {"three", 1, 3, 20, 4, 36, false},
  };
  return d;
}

const char* prec_name(Prec p) { return p == Prec::F32 ? "f32" : "bf16in"; }

void gemm_cases(std::vector<OpCase>& v) {
  for (Prec prec : {Prec::F32, Prec::BF16})
    for (int t = 0; t < 4; ++t)
      for (float beta : {0.0f, 1.0f}) {
        const bool ta = t & 1, tb = t & 2;
        const int64_t M = 13, N = 37, K = 50, lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 7;
        const int64_t na = (ta ? K : M) * lda, nb = (tb ? N : K) * ldb;
        Arg c = beta == 0.0f ? O(M * ldc) : IO(M * ldc);  // beta = 0 must not read C (it holds NaN)
        v.push_back({"gemm_" + std::string(ta ? "T" : "N") + (tb ? "T" : "N") + "_beta" + std::to_string(int(beta)) +
                         "_" + prec_name(prec),
                     {I(na), I(nb), c},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(GemmArgs{.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = 0.5f, .A = p.f(0),
                                      .lda = lda, .B = p.f(1), .ldb = ldb, .beta = beta, .C = p.f(2), .ldc = ldc,
                                      .prec = prec});
                       return 0.0;
                     },
                     kF32,
                     kB16,
                     true});
      }
  for (Prec prec : {Prec::F32, Prec::BF16}) {
    const int64_t M = 100, N = 768, K = 3072;  // ViT-B-32 c_proj at batch 2
    v.push_back({std::string("gemm_vit_cproj_") + prec_name(prec),
                 {I(M * K), I(N * K), O(M * N)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(GemmArgs{.ta = false, .tb = true, .M = M, .N = N, .K = K, .alpha = 1.0f, .A = p.f(0), .lda = K,
                                  .B = p.f(1), .ldb = K, .beta = 0.0f, .C = p.f(2), .ldc = N, .prec = prec});
                   return 0.0;
                 },
                 kF32,
                 kB16});
    const int64_t batch = 3, m = 50, n = 50, k = 64;  // attention heads
    v.push_back({std::string("gemm_batched_heads_") + prec_name(prec),
                 {I(batch * m * k), I(batch * n * k), IO(batch * m * n)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(GemmBatchedArgs{.batch = batch, .ta = false, .tb = true, .M = m, .N = n, .K = k, .alpha = 1.0f,
                                         .A = p.f(0), .lda = k, .stride_a = m * k, .B = p.f(1), .ldb = k,
                                         .stride_b = n * k, .beta = 1.0f, .C = p.f(2), .ldc = n, .stride_c = m * n,
                                         .prec = prec});
                   return 0.0;
                 },
                 kF32,
                 kB16});
  }
}

void dense_cases(std::vector<OpCase>& v) {
  for (const Dims& d : dims()) {
    const int64_t M = d.B * d.T, K = d.W;
    for (int64_t N : {3 * d.W, d.F})
      for (Prec prec : {Prec::F32, Prec::BF16})
        for (bool bias : {true, false}) {
          const std::string tag = d.name + "_N" + std::to_string(N) + "_" + prec_name(prec) + (bias ? "" : "_nobias");
          v.push_back({"linear_forward_" + tag,
                       {O(M * N), I(M * K), I(N * K, Draw::Normal, 0.05), I(N)},
                       [=](Backend& b, const Ptrs& p, float*) {
                         b.run(LinearForwardArgs{.out = p.f(0), .inp = p.f(1), .weight = p.f(2),
                                                 .bias = bias ? p.f(3) : nullptr, .M = M, .K = K, .N = N,
                                                 .prec = prec});
                         return 0.0;
                       },
                       kF32,
                       kB16,
                       !d.big});
          v.push_back({"linear_backward_" + tag,
                       {O(M * K), IO(N * K), IO(N), I(M * N), I(M * K), I(N * K, Draw::Normal, 0.05)},
                       [=](Backend& b, const Ptrs& p, float*) {
                         b.run(LinearBackwardArgs{.dinp = p.f(0), .dweight = p.f(1), .dbias = bias ? p.f(2) : nullptr,
                                                  .dout = p.f(3), .inp = p.f(4), .weight = p.f(5), .M = M, .K = K,
                                                  .N = N, .prec = prec});
                         return 0.0;
                       },
                       kF32,
                       kB16,
                       !d.big});
        }
    const int64_t E = d.big ? 512 : 7;  // visual.proj / text_projection: [W, E]
    for (Prec prec : {Prec::F32, Prec::BF16}) {
      v.push_back({"proj_forward_" + d.name + "_" + prec_name(prec),
                   {O(d.B * E), I(d.B * d.W), I(d.W * E)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(ProjForwardArgs{.out = p.f(0), .inp = p.f(1), .w = p.f(2), .M = d.B, .K = d.W, .N = E,
                                           .prec = prec});
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   !d.big});
      v.push_back({"proj_backward_" + d.name + "_" + prec_name(prec),
                   {O(d.B * d.W), IO(d.W * E), I(d.B * E), I(d.B * d.W), I(d.W * E)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(ProjBackwardArgs{.dinp = p.f(0), .dw = p.f(1), .dout = p.f(2), .inp = p.f(3), .w = p.f(4),
                                            .M = d.B, .K = d.W, .N = E, .prec = prec});
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   !d.big});
    }
    v.push_back({"layernorm_forward_" + d.name,
                 {O(M * K), O(M), O(M), I(M * K, Draw::Normal, 3.0), I(K), I(K)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(LayerNormForwardArgs{.out = p.f(0), .mean = p.f(1), .rstd = p.f(2), .inp = p.f(3),
                                              .weight = p.f(4), .bias = p.f(5), .N = M, .C = K, .eps = 1e-5});
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 !d.big});
    v.push_back({"layernorm_backward_" + d.name,
                 {IO(M * K), IO(K), IO(K), I(M * K), I(M * K), I(K), I(M), I(M, Draw::Positive)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(LayerNormBackwardArgs{.dinp = p.f(0), .dweight = p.f(1), .dbias = p.f(2), .dout = p.f(3),
                                               .inp = p.f(4), .weight = p.f(5), .mean = p.f(6), .rstd = p.f(7), .N = M,
                                               .C = K});
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 !d.big});
    for (Act act : {Act::Gelu, Act::QuickGelu, Act::GeluTanh}) {
      const int64_t n = M * d.F;
      const std::string tag = d.name + (act == Act::Gelu        ? "_gelu"
                                        : act == Act::QuickGelu ? "_quickgelu"
                                                                : "_gelutanh");
      v.push_back({"act_forward_" + tag,
                   {O(n), I(n, Draw::Normal, 3.0)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(ActForwardArgs{.out = p.f(0), .inp = p.f(1), .n = n, .act = act});
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   !d.big});
      v.push_back({"act_backward_" + tag,
                   {O(n), I(n), I(n, Draw::Normal, 3.0)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(ActBackwardArgs{.dinp = p.f(0), .dout = p.f(1), .inp = p.f(2), .n = n, .act = act});
                     return 0.0;
                   },
                   kF32,
                   kB16,
                   !d.big});
    }
    v.push_back({"add_inplace_" + d.name,
                 {IO(M * K), I(M * K)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(AddInplaceArgs{.y = p.f(0), .x = p.f(1), .n = M * K});
                   return 0.0;
                 },
                 kF32,
                 kB16,
                 !d.big});
  }
}

void attention_cases(std::vector<OpCase>& v) {
  for (const Dims& d : dims())
    for (bool causal : {false, true})
      for (Prec prec : {Prec::F32, Prec::BF16}) {
        const int64_t B = d.B, T = d.T, C = d.W, H = d.H, att = B * H * T * T;
        const std::string tag = d.name + (causal ? "_causal_" : "_") + prec_name(prec);
        const double tol = prec == Prec::F32 ? kF32 : kB16;  // P and dS rounded to bf16 inside
        v.push_back({"attention_forward_" + tag,
                     {O(B * T * C), O(att), I(B * T * 3 * C)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(AttentionForwardArgs{.out = p.f(0), .att = p.f(1), .qkv = p.f(2), .B = B, .Tn = T, .C = C,
                                                  .H = H, .causal = causal, .prec = prec});
                       return 0.0;
                     },
                     tol,
                     kB16,
                     !d.big});
        v.push_back({"attention_forward_inference_" + tag,  // att null: no probabilities kept
                     {O(B * T * C), I(B * T * 3 * C)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(AttentionForwardArgs{.out = p.f(0), .att = nullptr, .qkv = p.f(1), .B = B, .Tn = T,
                                                  .C = C, .H = H, .causal = causal, .prec = prec});
                       return 0.0;
                     },
                     tol,
                     kB16,
                     !d.big});
        v.push_back({"attention_backward_" + tag,
                     {O(B * T * 3 * C), Scratch(att), I(B * T * C), I(B * T * 3 * C), I(att, Draw::Unit)},
                     [=](Backend& b, const Ptrs& p, float*) {
                       b.run(AttentionBackwardArgs{.dqkv = p.f(0), .scratch = p.f(1), .dout = p.f(2), .qkv = p.f(3),
                                                   .att = p.f(4), .B = B, .Tn = T, .C = C, .H = H, .causal = causal,
                                                   .prec = prec});
                       return 0.0;
                     },
                     tol,
                     kB16,
                     !d.big});
        if (prec == Prec::F32) {
          v.push_back(
              {"attention_forward_bf16_" + d.name + (causal ? "_causal" : ""),
               {O16(B * T * C), O(att), I16(B * T * 3 * C)},
               [=](Backend& b, const Ptrs& p, float*) {
                 b.run(AttentionForwardBf16Args{.out = p.h(0), .att = p.f(1), .qkv = p.h(2), .B = B, .Tn = T, .C = C,
                                                .H = H, .causal = causal});
                 return 0.0;
               },
               kF32,
               kB16,
               !d.big});
          v.push_back(
              {"attention_forward_bf16_inference_" + d.name + (causal ? "_causal" : ""),
               {O16(B * T * C), I16(B * T * 3 * C)},
               [=](Backend& b, const Ptrs& p, float*) {
                 b.run(AttentionForwardBf16Args{.out = p.h(0), .att = nullptr, .qkv = p.h(1), .B = B, .Tn = T,
                                                .C = C, .H = H, .causal = causal});
                 return 0.0;
               },
               kF32,
               kB16,
               !d.big});
          v.push_back(
              {"attention_backward_bf16_" + d.name + (causal ? "_causal" : ""),
               {O(B * T * 3 * C), I16(B * T * C), I16(B * T * 3 * C), I(att, Draw::Unit)},
               [=](Backend& b, const Ptrs& p, float*) {
                 b.run(AttentionBackwardBf16Args{.dqkv = p.f(0), .dout = p.h(1), .qkv = p.h(2), .att = p.f(3), .B = B,
                                                 .Tn = T, .C = C, .H = H});
                 return 0.0;
               },
               kB16,
               kB16,
               !d.big});
        }
      }
}

// Cross attention (attention pooling) with the layouts the model uses: q rows padded to ldq
// (dq's padding must stay unwritten), k and v interleaved in one [B,Tk,2C] buffer. Shapes:
// timm's MAP head on ViT-B-16 (1 latent over 196 patches) and on ViT-SO400M-14-SigLIP-384 (1 over
// 729, head width 72: a head's K and V, 420 KB, would not fit a block's shared memory), CLIP's
// AttentionPool2d on RN50 (1 query over 50 tokens, 2048 wide, 32 heads), and odd ones (more queries than keys too).
void cross_attention_cases(std::vector<OpCase>& v) {
  struct Shape {
    std::string name;
    int64_t B, Tq, Tk, C, H, pad;
    bool big;
  };
  for (const Shape& s : {Shape{"map", 2, 1, 196, 768, 12, 0, true}, Shape{"map384", 2, 1, 729, 1152, 16, 0, true},
                         Shape{"pool2d", 2, 1, 50, 2048, 32, 0, true}, Shape{"odd", 3, 3, 13, 40, 5, 3, false},
                         Shape{"wide_q", 2, 5, 1, 24, 3, 1, false}})
    for (Prec prec : {Prec::F32, Prec::BF16}) {
      const int64_t B = s.B, Tq = s.Tq, Tk = s.Tk, C = s.C, H = s.H, ldq = C + s.pad, ldkv = 2 * C;
      const int64_t att = B * H * Tq * Tk, nq = B * Tq * ldq, nkv = B * Tk * ldkv;
      const std::string tag = s.name + "_" + prec_name(prec);
      const double tol = prec == Prec::F32 ? kF32 : kB16;  // P and dS rounded to bf16 inside
      v.push_back({"cross_attention_forward_" + tag,
                   {O(B * Tq * C), O(att), I(nq), I(nkv)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(CrossAttentionForwardArgs{.out = p.f(0), .att = p.f(1), .q = p.f(2), .k = p.f(3),
                                                     .v = p.f(3) + C, .ldq = ldq, .ldk = ldkv, .ldv = ldkv, .B = B,
                                                     .Tq = Tq, .Tk = Tk, .C = C, .H = H, .prec = prec});
                     return 0.0;
                   },
                   tol,
                   kB16,
                   !s.big});
      v.push_back({"cross_attention_backward_" + tag,
                   {O(nq), O(nkv), Scratch(att), I(B * Tq * C), I(nq), I(nkv), I(att, Draw::Unit)},
                   [=](Backend& b, const Ptrs& p, float*) {
                     b.run(CrossAttentionBackwardArgs{.dq = p.f(0), .dk = p.f(1), .dv = p.f(1) + C,
                                                      .scratch = p.f(2), .dout = p.f(3), .q = p.f(4), .k = p.f(5),
                                                      .v = p.f(5) + C, .att = p.f(6), .ldq = ldq, .ldk = ldkv,
                                                      .ldv = ldkv, .B = B, .Tq = Tq, .Tk = Tk, .C = C, .H = H,
                                                      .prec = prec});
                     return 0.0;
                   },
                   tol,
                   kB16,
                   !s.big});
    }
}

}  // namespace

void embed_loss_cases(std::vector<OpCase>& v);
void optim_bf16_cases(std::vector<OpCase>& v);
void token_cases(std::vector<OpCase>& v);
void convnet_cases(std::vector<OpCase>& v);
void eva_cases(std::vector<OpCase>& v);
void convnext_cases(std::vector<OpCase>& v);

std::vector<OpCase> all_cases() {
  std::vector<OpCase> v;
  gemm_cases(v);
  dense_cases(v);
  attention_cases(v);
  cross_attention_cases(v);
  embed_loss_cases(v);
  optim_bf16_cases(v);
  token_cases(v);
  convnet_cases(v);
  eva_cases(v);
  convnext_cases(v);
  return v;
}

}  // namespace oc::ops::test
