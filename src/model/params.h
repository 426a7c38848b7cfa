// Parameters by OpenCLIP's state_dict names and shapes, in state_dict order, packed into
// one float arena. The same layout serves gradients and AdamW moments. Pointers into a
// buffer are bound per layer (llm.c's ParameterTensors), with shapes in the comments.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "model/config.h"
#include "model/resnet_params.h"
#include "ops/backend.h"

namespace oc {

struct ParamInfo {
  std::string name;  // e.g. "visual.transformer.resblocks.0.attn.in_proj_weight"
  Shape shape;
  size_t offset = 0;  // in floats, 16-float aligned
  size_t numel = 0;
  bool decay = true;  // OpenCLIP's rule: no decay if ndim < 2 or name has bn/ln/bias/logit_scale
  // A module buffer (BatchNorm2d running statistics, model/resnet_params.h): in the state_dict,
  // written by the forward, never trained (its gradient stays 0, so AdamW leaves it as it is).
  bool buffer = false;
};

struct ParamTable {
  std::vector<ParamInfo> params;
  size_t total = 0;  // floats in the arena, including alignment padding
  int64_t count() const;  // parameters (no padding, no buffers)
  const ParamInfo* find(const std::string& name) const;
  // Appends one entry (64-byte aligned in the arena; sizes checked against overflow).
  void add(std::string name, Shape shape, bool buffer = false);
};

ParamTable make_param_table(const ModelCfg& cfg);

// One residual block (ResidualAttentionBlock), width W, mlp width F.
struct BlockParams {
  float* ln1_w;   // [W]
  float* ln1_b;   // [W]
  float* in_w;    // [3W, W]  attn.in_proj_weight (rows q|k|v)
  float* in_b;    // [3W]
  float* out_w;   // [W, W]   attn.out_proj.weight
  float* out_b;   // [W]
  float* ln2_w;   // [W]
  float* ln2_b;   // [W]
  float* fc_w;    // [F, W]   mlp.c_fc.weight
  float* fc_b;    // [F]
  float* proj_w;  // [W, F]   mlp.c_proj.weight
  float* proj_b;  // [W]
  // LayerScale (ls_init_value set): ls_1.gamma, ls_2.gamma; null without.
  float* ls1 = nullptr;  // [W]  scales the attention branch
  float* ls2 = nullptr;  // [W]  scales the MLP branch
};

// timm's AttentionPoolLatent (visual.trunk.attn_pool.*: the MAP head), width W, mlp width F.
struct MapHeadParams {
  float* latent = nullptr;  // [1,1,W]  the learned query
  float* q_w = nullptr;     // [W,W]    q (nn.Linear)
  float* q_b = nullptr;     // [W]
  float* kv_w = nullptr;    // [2W,W]   kv (rows k|v)
  float* kv_b = nullptr;    // [2W]
  float* proj_w = nullptr;  // [W,W]
  float* proj_b = nullptr;  // [W]
  float* ln_w = nullptr;    // [W]      norm
  float* ln_b = nullptr;    // [W]
  float* fc1_w = nullptr;   // [F,W]    mlp.fc1
  float* fc1_b = nullptr;   // [F]
  float* fc2_w = nullptr;   // [W,F]    mlp.fc2
  float* fc2_b = nullptr;   // [W]
};

struct ClipParams {
  // text (flattened into CLIP, as OpenCLIP's CLIP class)
  float* t_pos;        // [ctx, Wt]   positional_embedding
  float* t_proj;       // [Wt, E]     text_projection; with proj_bias: text_projection.weight [E, Wt]
  float* logit_scale;  // []          logit_scale
  float* logit_bias = nullptr;  // [] logit_bias (SigLIP models only: init_logit_bias)
  float* tok_emb;      // [V, Wt]     token_embedding.weight
  float* ln_final_w;   // [Wt]
  float* ln_final_b;   // [Wt]
  std::vector<BlockParams> t_blocks;
  // vision
  float* v_cls;        // [Wv]            visual.class_embedding
  float* v_pos;        // [G*G+1, Wv]     visual.positional_embedding
  float* v_proj;       // [Wv, E]         visual.proj
  float* v_conv;       // [Wv, 3, P, P]   visual.conv1.weight
  float* ln_pre_w;     // [Wv]  (null with no_ln_pre)
  float* ln_pre_b;
  float* ln_post_w;    // [Wv]
  float* ln_post_b;
  std::vector<BlockParams> v_blocks;
  float* t_proj_b = nullptr;  // [E]  text_projection.bias (proj_bias only)
  // A timm tower (vision_cfg.timm_model_name; model/params_timm.cpp) binds v_conv to
  // visual.trunk.patch_embed.proj.weight, v_pos to visual.trunk.pos_embed [1,G*G,Wv] (no class
  // token), ln_post to visual.trunk.norm, v_blocks to visual.trunk.blocks.*, and has no v_cls,
  // ln_pre or v_proj (null); these are its own:
  float* v_conv_b = nullptr;  // [Wv]  visual.trunk.patch_embed.proj.bias
  MapHeadParams v_map;        // visual.trunk.attn_pool.*
  ResNetParams rn;            // the ModifiedResNet tower instead of the ViT (vision.resnet())
};

// The state_dict prefix of vision block i ("visual.transformer.resblocks.i." or, for a timm
// tower, "visual.trunk.blocks.i.") and of text block i ("transformer.resblocks.i.", or
// "text.transformer.resblocks.i." with custom_text).
std::string vision_block_prefix(const ModelCfg& cfg, int i);
std::string text_block_prefix(const ModelCfg& cfg, int i);

// The parameter `name` in an arena laid out by `table` (an internal error when missing).
float* param_at(const ParamTable& t, float* base, const std::string& name);

// params_timm.cpp: the timm tower's parameters (visual.trunk.*, state_dict order), their
// binding (v_blocks included), and their initialisation (timm's: trunc_normal(0.02) Linear weights, zero biases,
// pos_embed trunc_normal(0.02), latent trunc_normal(W^-0.5), the patch conv PyTorch's
// default). init_timm_param returns false for a parameter that is not the timm tower's.
void add_timm_vision_params(ParamTable& t, const ModelCfg& cfg);
void bind_timm_vision(const ModelCfg& cfg, const ParamTable& t, float* base, ClipParams* p);
bool init_timm_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng);

// Binds named pointers into `base` (an arena laid out by `table`).
ClipParams bind_params(const ModelCfg& cfg, const ParamTable& table, float* base);

// OpenCLIP's initialisation (CLIP.init_parameters / TextTransformer.init_parameters, the
// vision tower's own randn * width^-0.5, PyTorch defaults elsewhere), from `seed`: each
// parameter is drawn on the host, in table order, and handed to `emit`.
void init_params_each(const ModelCfg& cfg, const ParamTable& table, uint64_t seed,
                      const std::function<void(const ParamInfo&, std::span<const float>)>& emit);
// Into an arena of `be` (`base` is its memory): one parameter at a time through copy_from_host.
void init_params(const ModelCfg& cfg, const ParamTable& table, ops::Backend& be, float* base, uint64_t seed);

}  // namespace oc
