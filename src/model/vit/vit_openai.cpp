// The ViT's fields as build_model_from_openai_state_dict infers them (model/openai_fields.h).
#include <cmath>

#include "model/openai_fields.h"

namespace oc {

void openai_vit_fields(const ModelCfg& cfg, const NamedTensors& sd, const std::string& w,
                       std::vector<OpenaiField>* f) {
  const HostTensor& conv = openai_need(sd, "visual.conv1.weight", w);
  int layers = 0;
  for (const auto& [k, t] : sd) layers += k.rfind("visual.", 0) == 0 && k.ends_with(".attn.in_proj_weight");
  const int64_t patch = openai_dim(conv, -1, "visual.conv1.weight", w);
  const int64_t pos = openai_dim(openai_need(sd, "visual.positional_embedding", w), 0, "visual.positional_embedding", w);
  const int64_t grid = std::llround(std::sqrt(double(pos - 1)));
  f->push_back(
      {"vision_cfg.width", openai_dim(conv, 0, "visual.conv1.weight", w), cfg.vision.width, "visual.conv1.weight"});
  f->push_back({"vision_cfg.layers", layers, cfg.vision.layers, "visual.*.attn.in_proj_weight"});
  f->push_back({"vision_cfg.patch_size", patch, cfg.vision.patch_size, "visual.conv1.weight"});
  f->push_back({"vision_cfg.image_size", patch * grid, cfg.vision.image_size, "visual.positional_embedding"});
}

}  // namespace oc
