// OpenCLIP's TextTransformer, CLIP's text tower (text_tower.h), planned once for a maximum batch:
//   tok_emb + pos -> causal blocks -> ln_final(x[eot]) -> @ text_projection
// It runs only up to the batch's last end-of-text token: with a causal mask, later positions
// change neither the pooled output nor any gradient. OpenCLIP's options (text_options.cpp):
// pool first/last, no causal mask (then the full context runs), proj_bias. LayerScale is in
// the blocks.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/config.h"
#include "model/params.h"
#include "model/text_tower.h"
#include "model/transformer.h"

namespace oc {

class TransformerTextTower final : public TextTower {
 public:
  TransformerTextTower(const ModelCfg& cfg, ops::Backend& be) : cfg_(cfg), be_(&be) { mem_.set_backend(be); }
  void bind(const ClipParams& p, const ClipParams* g) override { p_ = &p, g_ = g; }
  void plan(const TowerPlan& plan) override;
  void set_bf16_weights(const std::vector<BlockWeights16>* w16) override { w16_ = w16; }
  // --precision int8 inference: the blocks' int8 weights (null: the bf16 ones).
  void set_int8_weights(const std::vector<BlockWeightsInt8>* w8) override { w8_ = w8; }
  const float* forward(const int32_t* tokens, int64_t B, ops::Prec prec, bool normalize = true) override;
  void backward(const float* d_feat, ops::Prec prec) override;
  int64_t tokens_used() const override { return T_; }
  void set_full_context(bool full) override { full_context_ = full; }
  void set_block_hook(std::function<void(int64_t)> f) override { mem_.on_block_backward = std::move(f); }
  int64_t hooked_blocks() const override { return cfg_.text.layers; }
  double mib() const override { return mem_.mib() + extra_.mib(); }

 private:
  // The OpenCLIP options, in text_options.cpp.
  int64_t pool_positions(const int32_t* tokens, int64_t B);  // fills eot_, returns the tokens to compute
  void project_forward(const ClipParams& p, int64_t B, ops::Prec prec);
  void project_backward(const ClipParams& p, const ClipParams& g, int64_t B, ops::Prec prec);
  StackDims stack_dims(int64_t B, int64_t T, ops::Prec prec) const;

  ModelCfg cfg_;
  ops::Backend* be_;
  const ClipParams* p_ = nullptr;
  const ClipParams* g_ = nullptr;
  StackMemory mem_;
  ops::FloatArena extra_;
  const std::vector<BlockWeights16>* w16_ = nullptr;
  const std::vector<BlockWeightsInt8>* w8_ = nullptr;
  std::vector<int32_t> tok_, eot_;
  int64_t B_max_ = 0, B_ = 0, T_ = 0;
  bool training_ = false, full_context_ = false;
  float *pooled_in_, *pooled_, *fin_mean_, *fin_rstd_, *feat_raw_, *feat_, *norm_, *d_feat_raw_, *d_pooled_,
      *d_pooled_in_, *d_stack_out_;
};

}  // namespace oc
