#include "model/resnet/config_resnet.h"

#include "core/check.h"
#include "model/config_limits.h"
#include "model/resnet/modified_resnet.h"

namespace oc {

bool is_resnet_vision_cfg(const nlohmann::json& v) { return v.contains("layers") && v["layers"].is_array(); }

void read_resnet_layers(const nlohmann::json& v, VisionCfg* c, const std::string& where) {
  const nlohmann::json& l = v["layers"];
  if (l.size() != 4) OC_USER_ERROR("{}: \"layers\" as a list (a ResNet) must have 4 entries, got {}", where, l.size());
  for (const nlohmann::json& n : l) {
    if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > ModelLimits::kMaxLayers)
      OC_USER_ERROR("{}: \"layers\" entries must be integers in [1, {}], got {}", where, ModelLimits::kMaxLayers,
                    n.dump());
    c->resnet_layers.push_back(n.get<int>());
  }
  if (v.contains("patch_size") && !v["patch_size"].is_null())
    OC_USER_ERROR("{}: a ResNet tower (\"layers\" as a list) has no \"patch_size\"; set it to null", where);
  c->patch_size = 32;
  c->layers = c->resnet_layers[0] + c->resnet_layers[1] + c->resnet_layers[2] + c->resnet_layers[3];
}

void ResNetTower::write_vision_cfg(nlohmann::json* v) const {
  (*v)["layers"] = cfg_.vision.resnet_layers;
  (*v)["patch_size"] = nullptr;
  v->erase("mlp_ratio");
}

void check_resnet_widths(const VisionCfg& v, const std::string& w) {
  if (v.width % 2) OC_USER_ERROR("{}: a ResNet's width must be even, got {}", w, v.width);
  if (v.head_width < 1 || v.head_width > v.width * 32)
    OC_USER_ERROR("{}: \"{}\" must be in [{}, {}], got {}", w, "head_width", 1, v.width * 32, v.head_width);
  if (v.width * 32 % v.head_width)
    OC_USER_ERROR("{}: width * 32 = {} is not a multiple of head_width {}", w, v.width * 32, v.head_width);
}

}  // namespace oc
