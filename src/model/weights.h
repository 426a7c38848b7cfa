// Model weights by OpenCLIP state_dict name: read from .safetensors or torch .pt/.bin/.pth
// (bare state_dict or a training checkpoint's 'state_dict', with or without DDP's
// "module." prefix), and written as safetensors or a torch state_dict. Loading is strict:
// every parameter present with its shape; a mismatch names the key and both shapes.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "model/clip.h"

namespace oc {

using NamedTensors = std::vector<std::pair<std::string, HostTensor>>;

// Reads any supported weights file into name -> tensor (state_dict extracted, "module."
// stripped). Throws oc::Error naming the file and what is wrong.
NamedTensors read_state_dict(const std::string& path);

// Copies `sd` into the model's parameters (converted to fp32). Keys OpenCLIP itself drops
// (attn_mask, position_ids, input_resolution, context_length, vocab_size) are ignored; a
// missing or unexpected key, or a wrong shape, is an error naming the first such key
// and the shapes. logit_scale may be [] or [1]. The text tower's names follow the model:
// CLIP's top-level layout and CustomTextCLIP's text.* are converted into each other.
void load_state_dict(Clip& model, const NamedTensors& sd, const std::string& where);
// What OpenCLIP's load_checkpoint does to pretrained weights before load_state_dict: a zero
// logit_bias (shaped as logit_scale) for a model that has one (--siglip) when the file has
// none; the positional embeddings resized to the model (model/pos_embed_resize.h) when
// --force-image-size / --force-context-length changed it (OpenCLIP's ViT and CLIP-layout text
// only, as its code). Resuming a run's checkpoint does none of this (OpenCLIP neither).
void adapt_pretrained(const Clip& model, NamedTensors& sd);
// A TorchScript archive (OpenAI's `openai` files) loads as OpenCLIP's load_openai_model
// (model/weights_openai.h); any other file as load_checkpoint: adapt_pretrained, then
// load_state_dict.
void load_weights(Clip& model, const std::string& path);

// The model's parameters as views in state_dict order (valid while the model lives). The
// views point into the model backend's memory: host memory only when
// model.backend().host_memory(); otherwise read them with copy_to_host.
std::vector<std::pair<std::string, TensorView>> state_dict_views(const Clip& model);
// Host copies of the parameters (for checkpoints written while training continues).
NamedTensors state_dict_copy(const Clip& model);
// A host copy of parameter `p` of an arena of `be` laid out as the parameters (the
// parameters themselves, or an optimizer moment).
HostTensor param_to_host(ops::Backend& be, const float* arena, const ParamInfo& p);

// Writes the weights: .safetensors by extension, else a torch state_dict (.pt/.bin/.pth).
void save_weights(const Clip& model, const std::string& path);

}  // namespace oc
