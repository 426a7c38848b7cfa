// EVA02 image towers as OpenCLIP 2.24's TimmModel builds them from vision_cfg.timm_model_name
// (timm 0.9.16's models/eva.py, the eva02_*_clip_* entries): the EVA02-B-16, -L-14 and -L-14-336
// configs, with timm_pool "token" and timm_proj null (timm's own head: a Linear from the class
// token to embed_dim). EVA02-E-14 (post-norm blocks, GELU MLP, no rotary embedding) and the
// EVA01 towers are other architectures and are refused naming the model.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model/config.h"

namespace oc {

// The architecture a timm EVA02 model name fixes (OpenCLIP ignores vision_cfg's sizes for timm).
struct EvaSpec {
  std::string_view name;
  int image_size, patch_size, width, layers, heads;
  double mlp_ratio;   // timm's 4 * 2 / 3: SwiGLU's hidden width int(width * mlp_ratio)
  int rope_ref_grid;  // ref_feat_shape: the rotary embedding's positions scale to this grid
};
const EvaSpec* find_eva(std::string_view timm_model_name);

// Whether a vision_cfg names a timm EVA model (built or not): its reader is read_eva_vision.
bool is_eva_vision_cfg(const nlohmann::json& v);
// Whether a read config's image tower is an EVA02 tower (model/eva/eva_tower.h).
bool is_eva(const VisionCfg& v);
// Fills `c` from a vision_cfg with an EVA "timm_model_name" (keys already checked by
// config_keys.cpp); refuses the EVA models that are not built, and head options other than
// OpenCLIP's EVA02 configs'.
void read_eva_vision(const nlohmann::json& v, VisionCfg* c, const std::string& where);
// The vision_cfg JSON of an EVA02 tower, as OpenCLIP's configs spell it.
nlohmann::json eva_vision_json(const VisionCfg& c);

}  // namespace oc
