// The fast CPU backend: every op forwards to the free function of ops/*.h implemented in
// ops/cpu/ (oneDNN GEMMs, AVX2/AVX-512 kernels, OpenMP), the code the model called
// directly before backends existed, so fp32 results are bitwise what they were.
#include "ops/cpu/cpu_backend.h"

#include "ops/attention.h"
#include "ops/bf16_ops.h"
#include "ops/embed.h"
#include "ops/host_backend.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/siglip_loss.h"
#include "ops/tokens.h"

namespace oc::ops {
namespace {

class CpuBackend final : public HostBackend {
 public:
  std::string_view name() const override { return "cpu"; }

  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
            int64_t ldb, float beta, float* C, int64_t ldc, Prec prec) override {
    ops::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, prec);
  }
  void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                    int64_t ldc, int64_t stride_c, Prec prec) override {
    ops::gemm_batched(batch, ta, tb, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, prec);
  }
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                      int64_t N, Prec prec) override {
    ops::linear_forward(out, inp, weight, bias, M, K, N, prec);
  }
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int64_t M, int64_t K, int64_t N, Prec prec) override {
    ops::linear_backward(dinp, dweight, dbias, dout, inp, weight, M, K, N, prec);
  }
  void proj_forward(float* out, const float* inp, const float* w, int64_t M, int64_t K, int64_t N, Prec prec) override {
    ops::proj_forward(out, inp, w, M, K, N, prec);
  }
  void proj_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int64_t M, int64_t K,
                     int64_t N, Prec prec) override {
    ops::proj_backward(dinp, dw, dout, inp, w, M, K, N, prec);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                         int64_t N, int64_t C, double eps) override {
    ops::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C) override {
    ops::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void act_forward(float* out, const float* inp, int64_t n, Act act) override { ops::act_forward(out, inp, n, act); }
  void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, Act act) override {
    ops::act_backward(dinp, dout, inp, n, act);
  }
  void add_inplace(float* y, const float* x, int64_t n) override { ops::add_inplace(y, x, n); }
  void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C) override {
    ops::layer_scale_forward(x, gamma, N, C);
  }
  void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N,
                            int64_t C) override {
    ops::layer_scale_backward(dgamma, o_dx, dy, gamma, N, C);
  }
  void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C) override {
    ops::mean_tokens_forward(out, inp, B, Tn, first, C);
  }
  void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C) override {
    ops::mean_tokens_backward(dinp, dout, B, Tn, first, C);
  }
  void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                             int64_t C) override {
    ops::gather_tokens_forward(out, inp, idx, B, Tn, K, C);
  }
  void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                              int64_t C) override {
    ops::gather_tokens_backward(dinp, dout, idx, B, Tn, K, C);
  }
  void attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                         bool causal, Prec prec) override {
    ops::attention_forward(out, att, qkv, B, Tn, C, H, causal, prec);
  }
  void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int64_t B,
                          int64_t Tn, int64_t C, int64_t H, bool causal, Prec prec) override {
    ops::attention_backward(dqkv, scratch, dout, qkv, att, B, Tn, C, H, causal, prec);
  }
  void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P) override {
    ops::im2patches(patches, img, B, S, P);
  }
  void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                         int64_t C) override {
    ops::vit_embed_forward(x, patch_out, cls, pos, B, Np, C);
  }
  void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np,
                          int64_t C) override {
    ops::vit_embed_backward(dpatch_out, dcls, dpos, dx, B, Np, C);
  }
  void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                           int64_t C, int64_t V) override {
    ops::token_embed_forward(x, tokens, wte, wpe, B, Tn, C, V);
  }
  void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                            int64_t C, int64_t V) override {
    ops::token_embed_backward(dwte, dwpe, dx, tokens, B, Tn, C, V);
  }
  void gather_rows_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn,
                           int64_t C) override {
    ops::gather_rows_forward(out, inp, idx, B, Tn, C);
  }
  void gather_rows_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn,
                            int64_t C) override {
    ops::gather_rows_backward(dinp, dout, idx, B, Tn, C);
  }
  void l2norm_forward(float* out, float* norm, const float* inp, int64_t N, int64_t C) override {
    ops::l2norm_forward(out, norm, inp, N, C);
  }
  void l2norm_backward(float* dinp, const float* dout, const float* out, const float* norm, int64_t N,
                       int64_t C) override {
    ops::l2norm_backward(dinp, dout, out, norm, N, C);
  }
  double clip_loss_forward_backward(float* dimg, float* dtxt, float* dimg_all, float* dtxt_all, float* dscale_log,
                                    float* scratch, const float* img, const float* txt, const float* img_all,
                                    const float* txt_all, float scale, int64_t Nl, int64_t Na, int64_t E,
                                    int64_t label_offset) override {
    return ops::clip_loss_forward_backward(dimg, dtxt, dimg_all, dtxt_all, dscale_log, scratch, img, txt, img_all,
                                           txt_all, scale, Nl, Na, E, label_offset);
  }
  double siglip_loss_forward_backward(float* dimg, float* dtxt, float* dscale_log, float* dbias, const float* img,
                                      const float* txt, float scale, float bias, int64_t B, int64_t M, int64_t E,
                                      bool positives) override {
    return ops::siglip_loss_forward_backward(dimg, dtxt, dscale_log, dbias, img, txt, scale, bias, B, M, E, positives);
  }
  void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                  float eps, float wd, int64_t step) override {
    ops::adamw_step(p, g, m, v, n, lr, beta1, beta2, eps, wd, step);
  }
  void adamw_step_spans(float* p, const float* g, float* m, float* v, const std::vector<AdamWSpan>& spans, float lr,
                        float beta1, float beta2, float eps, int64_t step) override {
    ops::adamw_step_spans(p, g, m, v, spans, lr, beta1, beta2, eps, step);
  }
  double sum_squares(const float* x, int64_t n) override { return ops::sum_squares(x, n); }
  void scale_inplace(float* x, int64_t n, float s) override { ops::scale_inplace(x, n, s); }
  bool all_finite(const float* x, int64_t n) override { return ops::all_finite(x, n); }
  void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                 int64_t ldb, float* C, int64_t ldc, const Epilogue& e) override {
    ops::gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e);
  }
  void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                 int64_t ldb, bf16* C, int64_t ldc, const Epilogue& e) override {
    ops::gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e);
  }
  void cast_to_bf16(bf16* dst, const float* src, int64_t n) override { ops::cast_to_bf16(dst, src, n); }
  void prepare_weight_bf16(const bf16* W, int64_t N, int64_t K) override { ops::prepare_weight_bf16(W, N, K); }
  void release_weight_bf16(const bf16* W) override { ops::release_weight_bf16(W); }
  void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                              const float* bias, int64_t N, int64_t C, double eps) override {
    ops::layernorm_forward_bf16(out, mean, rstd, inp, weight, bias, N, C, eps);
  }
  void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                  const float* bias, int64_t N, int64_t C, double eps) override {
    ops::add_layernorm_forward_bf16(xm, out, mean, rstd, x, weight, bias, N, C, eps);
  }
  void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act) override {
    ops::act_forward_bf16(out, inp, n, act);
  }
  void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N,
                         Act act) override {
    ops::act_backward_bf16(dinp, dbias, dout, inp, M, N, act);
  }
  void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M,
                           int64_t N, Act act) override {
    ops::act_value_grad_bf16(act16, dh16, dbias, dact, h, M, N, act);
  }
  void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N) override {
    ops::bias_grad_to_bf16(out, dbias, dout, M, N);
  }
  void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                              bool causal) override {
    ops::attention_forward_bf16(out, att, qkv, B, Tn, C, H, causal);
  }
  void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B, int64_t Tn,
                               int64_t C, int64_t H) override {
    ops::attention_backward_bf16(dqkv, dout, qkv, att, B, Tn, C, H);
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace oc::ops
