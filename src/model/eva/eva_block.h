// timm 0.9.16's EvaBlock as the EVA02 CLIP towers configure it (pre-norm, no LayerScale):
//   a  = norm1(x)
//   qkv = (q_proj(a) [bias], k_proj(a) [no bias], v_proj(a) [bias]), rotary embedding on q and k
//         of the patch tokens (ops/rope.h), attention (ops/attention.h)
//   xm = x + attn.proj(attn.norm(attention output))            (scale_attn_inner)
//   b  = norm2(xm);  h = silu(fc1_g(b)) * fc1_x(b)              (SwiGLU, ops/swiglu.h)
//   out = xm + fc2(mlp.norm(h))                                   (scale_mlp: the sub-LayerNorm)
// The q|k|v projections write attention's packed [B, T, 3W] buffer directly (GEMMs with a row
// stride) and their biases are added as a rank-1 GEMM with a column of ones, so the parameters
// stay OpenCLIP's separate tensors. Kept for backward per block: the input, the LayerNorm
// statistics, the rotated qkv, the attention probabilities and output, the mid residual and
// the two SwiGLU inputs; the LayerNorm outputs and the gate are recomputed.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/gemm.h"

namespace oc {

struct EvaBlockParams {
  float *ln1_w, *ln1_b;          // [W]     norm1
  float *q_w, *q_b, *k_w;        // [W, W], [W]   attn.q_proj, attn.k_proj (no bias)
  float *v_w, *v_b;              // [W, W], [W]   attn.v_proj
  float *an_w, *an_b;            // [W]     attn.norm
  float *proj_w, *proj_b;        // [W, W], [W]   attn.proj
  float *ln2_w, *ln2_b;          // [W]     norm2
  float *g_w, *g_b, *x_w, *x_b;  // [F, W], [F]   mlp.fc1_g, mlp.fc1_x
  float *mn_w, *mn_b;            // [F]     mlp.norm
  float *fc2_w, *fc2_b;          // [W, F], [W]   mlp.fc2
};

struct EvaDims {
  int64_t B = 0, T = 0, W = 0, H = 0, F = 0, L = 0;
  double eps = 1e-6;
  ops::Prec prec = ops::Prec::F32;
};

// The block stack's activations and scratch, planned for (B_max, T) once.
class EvaStack {
 public:
  // checkpoint (--grad-checkpointing): keep only each block's input; backward recomputes a
  // block's activations into one shared slot before differentiating it.
  void plan(ops::Backend& be, const std::string& label, int64_t B_max, const EvaDims& d, bool training,
            bool checkpoint = false);
  // The input of block 0 ([B, T, W]; the caller writes it) and the output of the last block.
  float* in() { return x_slot(0); }
  float* out() { return x_slot(d_.L); }
  // sincos [T - 1, 2 D]: the rotary table (backend memory), the class token left out.
  void forward(const std::vector<EvaBlockParams>& p, const float* sincos, const EvaDims& d);
  // d_out [B, T, W] (consumed) -> parameter gradients (accumulated into g); returns the gradient
  // w.r.t. the stack's input (valid until the next call).
  float* backward(const std::vector<EvaBlockParams>& p, const std::vector<EvaBlockParams>& g, const float* sincos,
                  float* d_out, const EvaDims& d);
  double mib() const { return arena_.mib(); }

 private:
  struct Acts {  // one block's kept activations, carved for the run's B
    float *x, *st1, *qkv, *att, *ao, *sta, *xm, *st2, *gate, *up, *st3;
  };
  Acts acts(int64_t l) const;
  float* x_slot(int64_t l) const;
  void block_forward(const EvaBlockParams& p, const Acts& a, float* out, const float* sincos) const;
  void mlp_backward(const EvaBlockParams& p, const EvaBlockParams& g, const Acts& a, float* d_res) const;
  void attn_backward(const EvaBlockParams& p, const EvaBlockParams& g, const Acts& a, float* d_res,
                     const float* sincos) const;
  void layer_norm(float* out, float* stats, const float* inp, const float* w, const float* b, int64_t C) const;
  void ln_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                   const float* stats, int64_t C) const;

  ops::Backend* be_ = nullptr;
  ops::FloatArena arena_;
  EvaDims d_;  // the run's dimensions (B, prec); W, H, F, L, T as planned
  int64_t B_max_ = 0;
  bool training_ = false, checkpoint_ = false;
  size_t act_stride_ = 0;
  float *xs_ = nullptr, *acts_ = nullptr, *ones_ = nullptr, *ln_ = nullptr, *h_ = nullptr, *d_w_ = nullptr,
        *d_w2_ = nullptr, *d_big_ = nullptr, *d_f_ = nullptr, *d_att_ = nullptr, *stat_ = nullptr;
};

}  // namespace oc
