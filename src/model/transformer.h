// The pre-norm residual stack shared by both towers (OpenCLIP's Transformer of
// ResidualAttentionBlocks):  x = x + out_proj(attn(ln_1(x)));  x = x + c_proj(act(c_fc(ln_2(x)))).
// Activations kept for backward are the minimum: LayerNorm outputs and the MLP activation are
// recomputed from saved statistics / pre-activations during backward (one layer's scratch).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/params.h"
#include "model/weights_bf16.h"
#include "model/weights_int8.h"
#include "ops/activation.h"
#include "ops/backend.h"
#include "ops/gemm.h"

namespace oc {

struct StackDims {
  int64_t B = 0, T = 0;  // batch, tokens in use (T <= T_max of the arena)
  int64_t W = 0, H = 0, F = 0;  // width, heads, mlp width
  int64_t layers = 0;
  bool causal = false;
  ops::Act act = ops::Act::Gelu;
  double eps = 1e-5;
  ops::Prec prec = ops::Prec::F32;
  // amp_bf16 with bf16 activations: the blocks' bf16 weight copies (null: the fp32 path,
  // or BF16 GEMMs converting their fp32 operands per call).
  const std::vector<BlockWeights16>* w16 = nullptr;
  // int8 inference (block_int8.h): the blocks' int8 weights, with bf16 activations (w16 null).
  const std::vector<BlockWeightsInt8>* w8 = nullptr;
  ops::Backend* be = nullptr;  // runs every op; the arena's memory is this backend's
};

// Saved activations of one block, each [B, T, ...] with the batch's T.
struct BlockActs {
  float* x;      // [B,T,W]   block input (residual stream)
  float* mean1;  // [B*T]
  float* rstd1;  // [B*T]
  float* qkv;    // [B,T,3W]
  float* att;    // [B,H,T,T] softmax probabilities
  float* ao;     // [B,T,W]   attention output (before out_proj)
  float* xm;     // [B,T,W]   residual after attention
  float* mean2;  // [B*T]
  float* rstd2;  // [B*T]
  float* h;      // [B,T,F]   c_fc output (before the activation)
  // Planned with bf16 activations, qkv and ao are kept only in bf16 (they are only GEMM
  // operands) and the float pointers above are null. Training with bf16 activations also
  // leaves att, xm and h null: the bf16 block keeps them in scratch and backward recomputes them.
  bf16* qkv16;   // [B,T,3W]
  bf16* ao16;    // [B,T,W]
};

// Arena for a stack's activations and backward scratch, sized for (B_max, T_max).
// Training keeps every layer's activations; inference reuses one layer's.
class StackMemory {
 public:
  // checkpoint (--grad-checkpointing): keep only each block's input; backward recomputes a
  // block's activations into one shared slot before differentiating it.
  // bf16_acts: amp_bf16 layout (qkv16/ao16 instead of qkv/ao, plus bf16 scratch).
  void plan(int64_t B_max, int64_t T_max, int64_t W, int64_t H, int64_t F, int64_t layers, bool training,
            bool checkpoint = false, bool bf16_acts = false);
  void set_backend(ops::Backend& be) { be_ = &be; }  // where plan() allocates
  void set_label(std::string s) { label_ = std::move(s); }  // "ViT-B-32 vision tower, batch 256"
  const std::string& label() const { return label_; }
  bool bf16_acts() const { return bf16_acts_; }
  bool checkpointing() const { return checkpoint_; }
  bool training() const { return training_; }
  bool fits(int64_t B, int64_t T) const { return B <= B_max_ && T <= T_max_; }
  BlockActs layer(int64_t l, int64_t B, int64_t T);  // carved for the current B, T
  float* out(int64_t B, int64_t T);                  // [B,T,W] output of the last block
  // Backward scratch, sized for B_max*T_max.
  float* d_res() { return d_res_; }    // [B,T,W] gradient of the residual stream
  float* d_big() { return d_big_; }    // [B,T,max(3W,F)]
  float* d_big2() { return d_big2_; }  // [B,T,max(3W,F)] (recomputed activations; bf16 blocks: h)
  float* d_att() { return d_att_; }    // [B,H,T,T]
  float* ln_buf() { return ln_buf_; }  // [B,T,W] (recomputed LayerNorm output)
  float* stat_buf() { return stat_buf_; }  // [2*B*T]
  // bf16 scratch (bf16_acts only), sized for B_max*T_max.
  bf16* s16_big() { return s16_big_; }    // [B,T,max(3W,F)]
  bf16* s16_big2() { return s16_big2_; }  // [B,T,F] (training)
  bf16* s16_a() { return s16_a_; }      // [B,T,W]
  bf16* s16_b() { return s16_b_; }      // [B,T,W]
  double mib() const { return buf_.mib(); }
  // Called by stack_backward when block l's parameter gradients are final (data-parallel
  // training starts their all-reduce while the lower blocks are still computed).
  std::function<void(int64_t layer)> on_block_backward;

 private:
  ops::FloatArena buf_;
  ops::Backend* be_ = &ops::default_backend();
  std::string label_ = "activations";
  int64_t B_max_ = 0, T_max_ = 0, W_ = 0, H_ = 0, F_ = 0, layers_ = 0;
  bool training_ = false, checkpoint_ = false, bf16_acts_ = false;
  bf16 *s16_big_ = nullptr, *s16_big2_ = nullptr, *s16_a_ = nullptr, *s16_b_ = nullptr;
  float* layers_base_ = nullptr;
  float* xs_ = nullptr;  // checkpointing: every block's input
  size_t layer_stride_ = 0;
  float *out_ = nullptr, *d_res_ = nullptr, *d_big_ = nullptr, *d_big2_ = nullptr, *d_att_ = nullptr,
        *ln_buf_ = nullptr, *stat_buf_ = nullptr;
};

// Multiply-accumulates of one block over T tokens (width w, MLP width f): the four GEMMs and
// the attention's two batched products.
inline double transformer_block_macs(double T, double w, double f) {
  return T * (3 * w * w + w * w + 2 * f * w) + 2 * T * T * w;
}

// Runs the stack on mem.layer(0).x (the caller writes the input there); the result lands in
// mem.out(B, T).
void stack_forward(const std::vector<BlockParams>& p, StackMemory& mem, const StackDims& d);
// d_out: [B,T,W] gradient w.r.t. the stack output (consumed: used as workspace). On return
// mem.d_res() holds the gradient w.r.t. the stack input. Parameter gradients accumulate in g.
void stack_backward(const std::vector<BlockParams>& p, const std::vector<BlockParams>& g, StackMemory& mem,
                    const float* d_out, const StackDims& d);

}  // namespace oc
