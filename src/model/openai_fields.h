// What OpenCLIP's build_model_from_openai_state_dict infers from an OpenAI state_dict, one
// field at a time, and the readers of its shapes. weights_openai.cpp checks the text tower and
// asks the family that the state_dict names (visual.proj: ViT, else ModifiedResNet) for the
// image tower's fields: vit/vit_openai.cpp, resnet/resnet_openai.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace oc {

struct OpenaiField {
  const char* name;
  int64_t want;  // from the state_dict
  int64_t have;  // the config's
  const char* how;
};

// sd[key], or an error naming the key and `where`.
const HostTensor& openai_need(const NamedTensors& sd, const std::string& key, const std::string& where);
// t.shape[i] (i < 0 from the end), or an error naming the key and its shape.
int64_t openai_dim(const HostTensor& t, int i, const std::string& key, const std::string& where);
// len(set(k.split(".")[2] for k in sd if k.startswith(prefix))): the blocks of a stage.
int openai_count_blocks(const NamedTensors& sd, const std::string& prefix);

// The image tower's fields, appended to *f.
void openai_vit_fields(const ModelCfg& cfg, const NamedTensors& sd, const std::string& where,
                       std::vector<OpenaiField>* f);
void openai_resnet_fields(const ModelCfg& cfg, const NamedTensors& sd, const std::string& where,
                          std::vector<OpenaiField>* f);

}  // namespace oc
