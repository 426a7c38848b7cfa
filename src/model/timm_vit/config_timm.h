// timm image towers as OpenCLIP 2.24's TimmModel builds them from vision_cfg.timm_model_name.
// Built: the SigLIP and SigLIP2 configs' VisionTransformers (timm 1.0's vit_*_siglip_*: no class
// token, global_pool "map" = AttentionPoolLatent, LayerNorm eps 1e-6, exact GELU or, for the
// SigLIP2 towers, GELU's tanh approximation) with
// timm_pool "map" and timm_proj "none" (the pooled width is the embedding). Any other timm
// model or head is refused naming the key and what is built.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model/config.h"

namespace oc {

// The architecture a timm model name fixes (OpenCLIP ignores vision_cfg's sizes for timm).
struct TimmVitSpec {
  std::string_view name;
  int image_size, patch_size, width, layers, heads;
  double mlp_ratio;
  bool gelu_tanh;  // act_layer='gelu_tanh' (blocks and MAP head); else nn.GELU (erf)
};
const TimmVitSpec* find_timm_vit(std::string_view timm_model_name);

// Fills `c` from a vision_cfg with "timm_model_name" (keys already checked by
// config_keys.cpp). embed_dim must equal the tower's width (timm_proj "none").
void read_timm_vision(const nlohmann::json& v, int embed_dim, VisionCfg* c, const std::string& where);
// A vision_cfg without timm_model_name must leave the timm head keys at OpenCLIP's defaults.
void refuse_timm_head_keys(const nlohmann::json& v, const std::string& where);
// The vision_cfg JSON of a timm tower, as OpenCLIP's configs spell it.
nlohmann::json timm_vision_json(const VisionCfg& c);

}  // namespace oc
