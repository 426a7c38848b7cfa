// The vision_cfg of a timm ConvNeXt tower as OpenCLIP 2.24's TimmModel builds it (the
// convnext_* configs: timm_model_name convnext_tiny/small/base/large/xlarge/xxlarge, timm_pool
// "" or "avg", timm_proj "linear" or "mlp"), read and bounded (config.cpp calls the reader;
// ConvNextTower writes and checks it). The sizes come from the timm model name (timm 0.9.16
// models/convnext.py), as OpenCLIP ignores vision_cfg's ViT keys for a timm tower.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "model/config.h"

namespace oc {

struct ConvNextSpec {
  std::string_view name;
  int depths[4], dims[4];
  double ln_eps;  // timm's LayerNorm / LayerNorm2d: 1e-6; convnext_xxlarge's norm_eps 1e-5
};
const ConvNextSpec* find_convnext(std::string_view timm_model_name);

// Whether a vision_cfg names a timm ConvNeXt; whether a read config is one.
bool is_convnext_vision_cfg(const nlohmann::json& v);
bool is_convnext(const VisionCfg& v);
// Fills `c` from a vision_cfg with a convnext_* "timm_model_name" (keys already checked by
// config_keys.cpp).
void read_convnext_vision(const nlohmann::json& v, VisionCfg* c, const std::string& where);
// The ConvNeXt's own bounds: image_size a multiple of its total stride 32.
void check_convnext(const VisionCfg& c, const std::string& where);

}  // namespace oc
