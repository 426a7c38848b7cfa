// The two towers of CLIP. Each owns its activation memory (planned once for a maximum
// batch) and runs forward to L2-normalized embeddings and backward from their gradients.
//   vision: conv1 (patches @ W^T) -> [cls; patches] + pos -> ln_pre -> blocks -> ln_post(CLS) -> @ proj
//   text:   tok_emb + pos -> causal blocks -> ln_final(x[eot]) -> @ text_projection
// The text tower runs only up to the batch's last end-of-text token: with a causal mask,
// later positions change neither the pooled output nor any gradient.
#pragma once
#include <cstdint>

#include "core/buffer.h"
#include "model/config.h"
#include "model/params.h"
#include "model/transformer.h"

namespace oc {

class VisionTower {
 public:
  // bf16_acts: amp_bf16 with bf16 activations (then set_bf16_weights before forward).
  void plan(const ModelCfg& cfg, int64_t B_max, bool training, bool checkpoint = false, bool bf16_acts = false);
  void set_bf16_weights(const std::vector<BlockWeights16>* w16) { w16_ = w16; }
  void set_backend(ops::Backend& be) { be_ = &be, mem_.set_backend(be); }  // before plan()
  // images [B,3,S,S] -> features [B,E] (L2-normalized when normalize, the default).
  // Keeps what backward needs when planned for training.
  const float* forward(const ClipParams& p, const float* images, int64_t B, ops::Prec prec, bool normalize = true);
  // d_feat [B,E]: gradient w.r.t. the normalized features of the last forward.
  void backward(const ClipParams& p, const ClipParams& g, const float* d_feat, ops::Prec prec);
  double mib() const { return mem_.mib() + extra_.mib(); }
  int64_t planned_batch() const { return B_max_; }
  void set_block_hook(std::function<void(int64_t)> f) { mem_.on_block_backward = std::move(f); }

 private:
  ModelCfg cfg_;
  StackMemory mem_;
  ops::FloatArena extra_;
  const std::vector<BlockWeights16>* w16_ = nullptr;
  ops::Backend* be_ = &ops::default_backend();
  int64_t B_max_ = 0, B_ = 0;
  bool training_ = false;
  std::vector<int32_t> cls_index_;  // B_max zeros: the class token's position, for pooling
  float *patches_, *patch_out_, *x0_, *pre_mean_, *pre_rstd_, *cls_in_, *pooled_, *post_mean_, *post_rstd_,
      *feat_raw_, *feat_, *norm_, *d_feat_raw_, *d_pooled_, *d_cls_in_, *d_stack_out_, *d_x0_, *d_patch_out_;
};

class TextTower {
 public:
  // bf16_acts: amp_bf16 with bf16 activations (then set_bf16_weights before forward).
  void plan(const ModelCfg& cfg, int64_t B_max, bool training, bool checkpoint = false, bool bf16_acts = false);
  void set_bf16_weights(const std::vector<BlockWeights16>* w16) { w16_ = w16; }
  void set_backend(ops::Backend& be) { be_ = &be, mem_.set_backend(be); }  // before plan()
  // tokens [B, context_length] -> features [B,E]. Token ids outside the vocabulary are an
  // error naming the row, position and id.
  const float* forward(const ClipParams& p, const int32_t* tokens, int64_t B, ops::Prec prec, bool normalize = true);
  void backward(const ClipParams& p, const ClipParams& g, const float* d_feat, ops::Prec prec);
  int64_t tokens_used() const { return T_; }  // positions computed in the last forward
  // Forces the full context (for tests comparing against the truncated computation).
  void set_full_context(bool full) { full_context_ = full; }
  void set_block_hook(std::function<void(int64_t)> f) { mem_.on_block_backward = std::move(f); }
  double mib() const { return mem_.mib() + extra_.mib(); }

 private:
  ModelCfg cfg_;
  StackMemory mem_;
  ops::FloatArena extra_;
  const std::vector<BlockWeights16>* w16_ = nullptr;
  ops::Backend* be_ = &ops::default_backend();
  std::vector<int32_t> tok_, eot_;
  int64_t B_max_ = 0, B_ = 0, T_ = 0;
  bool training_ = false, full_context_ = false;
  float *pooled_in_, *pooled_, *fin_mean_, *fin_rstd_, *feat_raw_, *feat_, *norm_, *d_feat_raw_, *d_pooled_,
      *d_pooled_in_, *d_stack_out_;
};

}  // namespace oc
