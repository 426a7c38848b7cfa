// OpenCLIP's VisionTransformer image tower (the CLIP, -quickgelu, -plus, -alt and -CLIPA
// configs), planned once for a maximum batch:
//   conv1 (patches @ W^T) -> [cls; patches] + pos -> ln_pre -> blocks -> ln_post(CLS) -> @ proj
// OpenCLIP's options (vit_options.cpp): patch dropout after the positional embedding,
// no_ln_pre, average pooling and final_ln_after_pool. LayerScale is in the blocks.
// Parameters (vit_params.cpp): visual.class_embedding, positional_embedding, proj, conv1,
// ln_pre, transformer.resblocks.*, ln_post, in OpenCLIP's state_dict order.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/image_tower.h"
#include "model/transformer.h"

namespace oc {

// The tower's parameters bound into an arena (shapes with Wv the width, G the grid).
struct VitParams {
  float* v_cls = nullptr;     // [Wv]            visual.class_embedding
  float* v_pos = nullptr;     // [G*G+1, Wv]     visual.positional_embedding
  float* v_proj = nullptr;    // [Wv, E]         visual.proj
  float* v_conv = nullptr;    // [Wv, 3, P, P]   visual.conv1.weight
  float* ln_pre_w = nullptr;  // [Wv]  (null with no_ln_pre)
  float* ln_pre_b = nullptr;
  float* ln_post_w = nullptr;  // [Wv]
  float* ln_post_b = nullptr;
  std::vector<BlockParams> v_blocks;
};

class VisionTower final : public ImageTower {
 public:
  VisionTower(const ModelCfg& cfg, ops::Backend& be);
  const char* family() const override { return "OpenCLIP ViT"; }
  std::string describe() const override;

  void check_config(const std::string& where) const override;

  void add_params(ParamTable& t) const override;
  bool init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const override;
  void bind(const ParamTable& t, float* params, float* grads) override;
  const std::vector<BlockParams>& blocks() const override { return p_.v_blocks; }
  std::string block_prefix(int i) const override;
  // resize_pos_embed: visual.positional_embedding to the model's grid.
  void adapt_pretrained(std::vector<std::pair<std::string, HostTensor>>& sd) const override;
  void check_unlocked_groups(int) const override {}
  int lock_groups() const override { return cfg_.vision.layers + 2; }
  int lock_group(const std::string& name) const override;

  void set_bf16_weights(const std::vector<BlockWeights16>* w16) override { w16_ = w16; }
  // The blocks' and the patch embedding's int8 weights (null: the bf16 ones).
  void set_int8_weights(const Int8Weights* w8) override { w8_ = w8 ? &w8->vision() : nullptr, w8_all_ = w8; }
  const float* int8_patch_weight() const override { return p_.v_conv; }

  void plan(const TowerPlan& plan) override;
  // The patch grid always covers the image (config_limits.cpp refuses a remainder).
  ImageInput input() const override { return {.backend_images = true}; }
  const float* forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) override;
  void backward(const float* d_feat, ops::Prec prec) override;
  double mib() const override { return mem_.mib() + extra_.mib(); }
  double forward_macs() const override;
  void set_block_hook(std::function<void(int64_t)> f) override { mem_.on_block_backward = std::move(f); }
  int64_t hooked_blocks() const override { return cfg_.vision.layers; }

  // Patch dropout (vision_cfg.patch_dropout > 0, training forwards only). Which patches each
  // sample keeps: K distinct indices in [0, Np) per sample, written to idx[B*K]. The default
  // draws a uniformly random ordered subset per sample (as OpenCLIP's topk of randn) from
  // mix_seed(seed, forward number); tests may replace it.
  void set_patch_keep(PatchKeepFn f) override { patch_keep_ = std::move(f); }
  void set_patch_dropout_seed(uint64_t seed) override { dropout_seed_ = seed, dropout_calls_ = 0; }
  uint64_t patch_dropout_draws() const override { return dropout_calls_; }
  void set_patch_dropout_draws(uint64_t n) override { dropout_calls_ = n; }
  // Tokens the stack ran on in the last forward (1 + kept patches with patch dropout).
  int64_t tokens_used() const override { return T_; }
  // max(1, int(Np * (1 - prob))): OpenCLIP's PatchDropout count.
  static int64_t patches_kept(int64_t Np, double prob);
  // The default draw: per sample a uniformly random ordered K-subset of [0, Np) (partial
  // Fisher-Yates from one stream per sample). Not torch's generator: the same seed does not
  // give OpenCLIP's patches, only the same distribution.
  static void random_patch_keep(uint64_t seed, int64_t B, int64_t Np, int64_t K, int32_t* idx);

 private:
  // The OpenCLIP options, in vit_options.cpp.
  const float* patch_dropout_forward(int64_t B);  // returns the embeddings the stack starts from
  void patch_dropout_backward(int64_t B);         // d_stack_out_ (d of those) -> d_x0_
  void ln_pre_forward(const VitParams& p, float* out, const float* emb, int64_t B);
  void ln_pre_backward(const VitParams& p, const VitParams& g, float* d_emb, int64_t B);
  void pool_forward(const VitParams& p, int64_t B);
  void pool_backward(const VitParams& p, const VitParams& g, int64_t B);
  bool dropping() const { return drop_; }
  StackDims stack_dims(int64_t B, ops::Prec prec) const;                    // the block stack at the tokens in use
  void patch_embed_forward(const VitParams& p, int64_t B, ops::Prec prec);  // patches_ -> patch_out_

  ModelCfg cfg_;
  ops::Backend* be_;
  VitParams p_, g_;  // g_: bound when the model trains
  StackMemory mem_;
  ops::FloatArena extra_;
  const std::vector<BlockWeights16>* w16_ = nullptr;
  const std::vector<BlockWeightsInt8>* w8_ = nullptr;
  const Int8Weights* w8_all_ = nullptr;
  int64_t B_max_ = 0, B_ = 0, T_ = 0;
  PatchKeepFn patch_keep_;
  uint64_t dropout_seed_ = 0, dropout_calls_ = 0;
  bool drop_ = false;          // the last forward dropped patches
  std::vector<int32_t> keep_;  // [B, 1+K] token indices gathered by patch dropout (0: the class token)
  float* x_drop_ = nullptr;    // [B, 1+K, W] the kept embeddings
  float* ln_all_ = nullptr;    // [B, T, W] ln_post of every token (pool_type avg without final_ln_after_pool)
  bool training_ = false;
  std::vector<int32_t> cls_index_;  // B_max zeros: the class token's position, for pooling
  float* images_ = nullptr;         // [B,3,S,S] the batch in backend memory (device backends only)
  float *patches_, *patch_out_, *x0_, *pre_mean_, *pre_rstd_, *cls_in_, *pooled_, *post_mean_, *post_rstd_, *feat_raw_,
      *feat_, *norm_, *d_feat_raw_, *d_pooled_, *d_cls_in_, *d_stack_out_, *d_x0_, *d_patch_out_;
};

}  // namespace oc
