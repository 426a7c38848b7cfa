// The vision_cfg of a ModifiedResNet tower (OpenCLIP's RN configs: "layers" is a list of 4 block
// counts), read and bounded (config.cpp calls the reader; ResNetTower writes and checks it).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "model/config.h"

namespace oc {

// Whether a vision_cfg describes a ModifiedResNet (OpenCLIP's _build_vision_tower: "layers" a list).
bool is_resnet_vision_cfg(const nlohmann::json& v);
// "layers": [l1, l2, l3, l4]. The tower's total stride (32) stands in for the patch size, so
// grid() gives the attention pool's map; c->layers keeps the number of
// Bottlenecks. "patch_size" must be absent or null.
void read_resnet_layers(const nlohmann::json& v, VisionCfg* c, const std::string& where);
// The stem halves the width; the attention pool runs at width * 32 with head_width-wide heads.
void check_resnet_widths(const VisionCfg& v, const std::string& where);
inline int attnpool_heads(const VisionCfg& v) { return v.width * 32 / v.head_width; }

}  // namespace oc
