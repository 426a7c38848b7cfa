// The ModifiedResNet's fields as build_model_from_openai_state_dict infers them
// (model/openai_fields.h): the blocks of each stage, the stem width and, from the attention
// pool's positional embedding, the image size.
#include <cmath>

#include <fmt/format.h>

#include "core/check.h"
#include "model/openai_fields.h"

namespace oc {

void openai_resnet_fields(const ModelCfg& cfg, const NamedTensors& sd, const std::string& w,
                          std::vector<OpenaiField>* f) {
  static const char* names[] = {"vision_cfg.layers[0]", "vision_cfg.layers[1]", "vision_cfg.layers[2]",
                                "vision_cfg.layers[3]"};
  const std::vector<int>& have = cfg.vision.resnet_layers;
  for (int b = 1; b <= 4; ++b)
    f->push_back({names[b - 1], openai_count_blocks(sd, fmt::format("visual.layer{}", b)),
                  have.size() == 4 ? have[size_t(b - 1)] : -1, "visual.layerN.* blocks"});
  const int64_t pos = openai_dim(openai_need(sd, "visual.attnpool.positional_embedding", w), 0, "attnpool", w);
  const int64_t out = std::llround(std::sqrt(double(pos - 1)));
  if (out * out + 1 != pos)
    OC_USER_ERROR("{}: visual.attnpool.positional_embedding has {} rows, not a square grid + 1", w, pos);
  f->push_back({"vision_cfg.width", openai_dim(openai_need(sd, "visual.layer1.0.conv1.weight", w), 0, "layer1", w),
                cfg.vision.width, "visual.layer1.0.conv1.weight"});
  f->push_back({"vision_cfg.image_size", out * 32, cfg.vision.image_size, "visual.attnpool.positional_embedding"});
}

}  // namespace oc
