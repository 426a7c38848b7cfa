// timm's VisionTransformer as OpenCLIP 2.24's TimmModel wraps it for the SigLIP configs
// (vision_cfg.timm_model_name, config_timm.h):
//   x = patch_embed(img) (conv with bias) + pos_embed  (no class token, no norm_pre)
//   x = blocks(x)  (the shared pre-norm stack, LayerNorm eps 1e-6, GELU erf or tanh as the model's act_layer)
//   x = norm(x)    (every token)
//   pooled = attn_pool(x)  (the MAP head, map_head.h); TimmModel's head for timm_proj "none"
//   is empty, so the pooled [B, W] row is the image embedding (embed_dim == W).
// Parameters under OpenCLIP + timm's state_dict names (visual.trunk.*, timm_params.cpp).
// It shares the block stack (transformer.h) and the patch input (tower_util.h) with OpenCLIP's
// ViT (vit/), not its embedding, pooling, options or parameter names.
#pragma once
#include <cstdint>
#include <vector>

#include "model/image_tower.h"
#include "model/timm_vit/map_head.h"
#include "model/transformer.h"

namespace oc {

struct TimmVitParams {
  float* pos = nullptr;     // [1, G*G, W]     visual.trunk.pos_embed
  float* conv_w = nullptr;  // [W, 3, P, P]    visual.trunk.patch_embed.proj.weight
  float* conv_b = nullptr;  // [W]             visual.trunk.patch_embed.proj.bias
  float* norm_w = nullptr;  // [W]             visual.trunk.norm
  float* norm_b = nullptr;
  std::vector<BlockParams> blocks;  // visual.trunk.blocks.*
  MapHeadParams map;                // visual.trunk.attn_pool.*
};

class TimmVitTower final : public ImageTower {
 public:
  TimmVitTower(const ModelCfg& cfg, ops::Backend& be);
  const char* family() const override { return "timm ViT"; }
  std::string describe() const override;

  // timm_vision_json: the timm model name and head keys instead of the sizes.
  void write_vision_cfg(nlohmann::json* v) const override;
  void check_config(const std::string& where) const override;

  void add_params(ParamTable& t) const override;
  bool init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const override;
  void bind(const ParamTable& t, float* params, float* grads) override;
  const std::vector<BlockParams>& blocks() const override { return p_.blocks; }
  std::string block_prefix(int i) const override;
  // OpenCLIP groups a timm trunk with timm's group_matcher (not built): locked whole only.
  void check_unlocked_groups(int unlocked) const override;
  int lock_groups() const override { return 1; }
  int lock_group(const std::string& name) const override { return name.rfind("visual.", 0) == 0 ? 0 : -1; }

  std::string int8_refusal() const override;
  // timm's PatchDropout (what OpenCLIP's TimmModel hands the rate to) is not built.
  std::string patch_dropout_refusal() const override;
  void set_bf16_weights(const std::vector<BlockWeights16>* w16) override { w16_ = w16; }

  void plan(const TowerPlan& plan) override;
  // Not where the conv drops a remainder (SO400M at 384 with patch 14): the images are then
  // cropped to the grid on the host.
  ImageInput input() const override;
  const float* forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) override;
  void backward(const float* d_feat, ops::Prec prec) override;
  double mib() const override { return mem_.mib() + extra_.mib() + map_.mib(); }
  double forward_macs() const override;
  void set_block_hook(std::function<void(int64_t)> f) override { mem_.on_block_backward = std::move(f); }
  int64_t hooked_blocks() const override { return cfg_.vision.layers; }
  int64_t tokens_used() const override { return T_; }

 private:
  StackDims stack_dims(int64_t B, ops::Prec prec) const;
  // The top-left grid*P pixels of each image (timm's conv of stride P never reads the rest),
  // in crop_ (host memory).
  const float* crop_to_grid(const float* images, int64_t B);

  ModelCfg cfg_;
  ops::Backend* be_;
  TimmVitParams p_, g_;  // g_: bound when the model trains
  StackMemory mem_;
  ops::FloatArena extra_;
  MapHead map_;
  ops::Act act_ = ops::Act::Gelu;  // the timm model's act_layer (TimmVitSpec::gelu_tanh)
  const std::vector<BlockWeights16>* w16_ = nullptr;
  int64_t B_max_ = 0, B_ = 0, T_ = 0;
  bool training_ = false;
  std::vector<float> crop_;
  float* images_ = nullptr;  // [B,3,S,S] the batch in backend memory (device backends only)
  float *patches_ = nullptr, *post_mean_ = nullptr, *post_rstd_ = nullptr, *ln_all_ = nullptr, *feat_raw_ = nullptr,
        *feat_ = nullptr, *norm_ = nullptr, *d_feat_raw_ = nullptr, *d_ln_ = nullptr, *d_stack_out_ = nullptr;
};

}  // namespace oc
