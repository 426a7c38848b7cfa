// The reference implementations behind the `ref` backend: one plain loop nest per op, no
// threads, no intrinsics, no library calls, so each reads as the definition of the op.
// Sums and transcendental functions are evaluated in double and the result rounded once to
// float, so `ref` is at least as accurate as any float kernel: a backend compared with it
// is compared against (almost) the exact result, and its tolerance is its own error.
// bf16 rounding happens at exactly the points the amp_bf16 contract names (ops/bf16_*.h,
// attention_*_bf16): GEMM operands and the bf16 outputs; everything else is wide.
// Signatures and contracts are those of ops/*.h (see the comments there).
#pragma once
#include <cstdint>
#include <vector>

#include "core/bf16.h"
#include "ops/activation.h"
#include "ops/adamw.h"
#include "ops/bf16_gemm.h"
#include "ops/gemm.h"

namespace oc::ops::ref {

// dense.cpp
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
          int64_t ldb, float beta, float* C, int64_t ldc, Prec prec);
void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                  int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                  int64_t ldc, int64_t stride_c, Prec prec);
void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                    int64_t N, Prec prec);
void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t M, int64_t K, int64_t N, Prec prec);
void proj_forward(float* out, const float* inp, const float* w, int64_t M, int64_t K, int64_t N, Prec prec);
void proj_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int64_t M, int64_t K,
                   int64_t N, Prec prec);
void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int64_t N, int64_t C, double eps);
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C);
double act_value(double x, Act act);
double act_derivative(double x, Act act);
void act_forward(float* out, const float* inp, int64_t n, Act act);
void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, Act act);
void add_inplace(float* y, const float* x, int64_t n);

// tokens.cpp (OpenCLIP's tower options)
void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C);
void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N, int64_t C);
void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C);
void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C);
void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C);
void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                            int64_t C);

// attention.cpp
void attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                       bool causal, Prec prec);
void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int64_t B,
                        int64_t Tn, int64_t C, int64_t H, bool causal, Prec prec);
void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                            bool causal);
void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B, int64_t Tn,
                             int64_t C, int64_t H);

// embed.cpp
void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P);
void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                       int64_t C);
void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np, int64_t C);
void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                         int64_t C, int64_t V);
void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                          int64_t C, int64_t V);
void gather_rows_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t C);
void gather_rows_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t C);

// loss.cpp
void l2norm_forward(float* out, float* norm, const float* inp, int64_t N, int64_t C);
void l2norm_backward(float* dinp, const float* dout, const float* out, const float* norm, int64_t N, int64_t C);
double clip_loss_forward_backward(float* dimg, float* dtxt, float* dimg_all, float* dtxt_all, float* dscale_log,
                                  float* scratch, const float* img, const float* txt, const float* img_all,
                                  const float* txt_all, float scale, int64_t Nl, int64_t Na, int64_t E,
                                  int64_t label_offset);
double siglip_loss_forward_backward(float* dimg, float* dtxt, float* dscale_log, float* dbias, const float* img,
                                    const float* txt, float scale, float bias, int64_t B, int64_t M, int64_t E,
                                    bool positives);

// optim.cpp
void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2, float eps,
                float wd, int64_t step);
void adamw_step_spans(float* p, const float* g, float* m, float* v, const std::vector<AdamWSpan>& spans, float lr,
                      float beta1, float beta2, float eps, int64_t step);
double sum_squares(const float* x, int64_t n);
void scale_inplace(float* x, int64_t n, float s);
bool all_finite(const float* x, int64_t n);

// bf16.cpp
void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
               int64_t ldb, float* C, int64_t ldc, const Epilogue& e);
void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
               int64_t ldb, bf16* C, int64_t ldc, const Epilogue& e);
void cast_to_bf16(bf16* dst, const float* src, int64_t n);
void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                            const float* bias, int64_t N, int64_t C, double eps);
void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                const float* bias, int64_t N, int64_t C, double eps);
void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act);
void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N, Act act);
void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M, int64_t N,
                         Act act);
void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N);

}  // namespace oc::ops::ref
