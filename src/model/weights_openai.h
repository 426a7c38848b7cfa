// OpenAI's CLIP checkpoints (the `openai` tags: TorchScript archives written by
// torch.jit.save) loaded as OpenCLIP's load_openai_model + build_model_from_openai_state_dict
// load them: the model is the one the state_dict's shapes describe (ViT or ModifiedResNet,
// QuickGELU, 64-wide heads, every other option at CLIP's default), the scalars
// input_resolution / context_length / vocab_size are dropped, and the tensors that
// convert_weights_to_fp16 casts are held at fp16 values before the model goes to fp32.
#pragma once
#include <string>

#include "model/model_source.h"
#include "model/weights.h"

namespace oc {

// The model OpenCLIP would build from this OpenAI-layout state_dict, checked against `cfg`:
// a difference is an error naming the field, both values and how it was inferred.
void check_openai_config(const ModelCfg& cfg, const NamedTensors& sd, const std::string& where);
// check_openai_config, the fp16 rounding of convert_weights_to_fp16's set, then load_state_dict.
void load_openai_state_dict(Clip& model, NamedTensors sd, const std::string& where);
// A source whose weights are a TorchScript archive builds its model as load_openai_model
// does: with QuickGELU whatever the config says (ViT-B-32 + openai is ViT-B-32-quickgelu).
void apply_openai_archive(ModelSource& s);

}  // namespace oc
