// timm 0.9.16's Eva (models/eva.py) as OpenCLIP 2.24's TimmModel wraps it for the EVA02 configs
// (vision_cfg.timm_model_name eva02_*_clip_*, config_eva.h), timm_pool "token", timm_proj null:
//   x = patch_embed(img) (conv with bias); x = [cls_token, x] + pos_embed
//   x = blocks(x, rope)  (eva_block.h: rotary embedding from RotaryEmbeddingCat(in_pixels=False,
//                         ref_feat_shape) over the patch grid, rope_table.h)
//   x = norm(x)[:, 0]    (LayerNorm eps 1e-6; only the class token is read, so only it is normed)
//   feat = head(x)       (timm's classifier head, a Linear to embed_dim; TimmModel adds nothing)
// Parameters under OpenCLIP + timm's state_dict names (visual.trunk.*, eva_params.cpp); the
// rotary table is a non-persistent buffer in timm and is not in the state_dict.
#pragma once
#include <cstdint>
#include <vector>

#include "model/eva/eva_block.h"
#include "model/image_tower.h"

namespace oc {

struct EvaParams {
  float* cls = nullptr;                        // [1, 1, W]       visual.trunk.cls_token
  float* pos = nullptr;                        // [1, 1 + G*G, W] visual.trunk.pos_embed
  float* conv_w = nullptr;                     // [W, 3, P, P]    visual.trunk.patch_embed.proj.weight
  float* conv_b = nullptr;                     // [W]
  std::vector<EvaBlockParams> blocks;          // visual.trunk.blocks.*
  float *norm_w = nullptr, *norm_b = nullptr;  // [W]     visual.trunk.norm
  float *head_w = nullptr, *head_b = nullptr;  // [E, W], [E] visual.trunk.head
};

class EvaTower final : public ImageTower {
 public:
  EvaTower(const ModelCfg& cfg, ops::Backend& be);
  const char* family() const override { return "EVA02"; }
  std::string describe() const override;

  void write_vision_cfg(nlohmann::json* v) const override;
  void check_config(const std::string& where) const override;

  void add_params(ParamTable& t) const override;
  bool init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const override;
  void bind(const ParamTable& t, float* params, float* grads) override;
  // The EVA blocks are not OpenCLIP's ResidualAttentionBlock: none of the shared block copies.
  const std::vector<BlockParams>& blocks() const override { return no_blocks_; }
  std::string block_prefix(int i) const override;
  // OpenCLIP groups a timm trunk with timm's group_matcher (not built): locked whole only.
  void check_unlocked_groups(int unlocked) const override;
  int lock_groups() const override { return 1; }
  int lock_group(const std::string& name) const override { return name.rfind("visual.", 0) == 0 ? 0 : -1; }

  std::string int8_refusal() const override;
  std::string patch_dropout_refusal() const override;

  void plan(const TowerPlan& plan) override;
  ImageInput input() const override { return {.backend_images = true}; }
  const float* forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) override;
  void backward(const float* d_feat, ops::Prec prec) override;
  double mib() const override { return stack_.mib() + extra_.mib(); }
  double forward_macs() const override;
  void set_block_hook(std::function<void(int64_t)>) override {}  // every gradient completes at the end
  int64_t tokens_used() const override { return T_; }

 private:
  EvaDims dims(int64_t B, ops::Prec prec) const;
  void embed_backward(const float* dx, ops::Prec prec);

  ModelCfg cfg_;
  ops::Backend* be_;
  EvaParams p_, g_;  // g_: bound when the model trains
  EvaStack stack_;
  ops::FloatArena extra_;
  std::vector<BlockParams> no_blocks_;
  int64_t B_max_ = 0, B_ = 0, T_ = 0;
  bool training_ = false;
  float *images_ = nullptr, *patches_ = nullptr, *embed_ = nullptr, *sincos_ = nullptr, *cls_ = nullptr,
        *cls_ln_ = nullptr, *stats_ = nullptr, *feat_raw_ = nullptr, *feat_ = nullptr, *norm_ = nullptr,
        *d_feat_raw_ = nullptr, *d_cls_ln_ = nullptr, *d_cls_ = nullptr, *d_stack_ = nullptr;
};

}  // namespace oc
