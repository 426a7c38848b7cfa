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
#include "ops/backend.h"

namespace oc {

struct ParamInfo {
  std::string name;  // e.g. "visual.transformer.resblocks.0.attn.in_proj_weight"
  Shape shape;
  size_t offset = 0;  // in floats, 16-float aligned
  size_t numel = 0;
  bool decay = true;  // OpenCLIP's rule: no decay if ndim < 2 or name has bn/ln/bias/logit_scale
  // A module buffer (BatchNorm2d running statistics, model/resnet/resnet_params.h): in the state_dict,
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

// The model's table: the text tower's parameters (params.cpp), logit_scale (and logit_bias),
// and the image tower's (ImageTower::add_params), in OpenCLIP's state_dict order. Checks the
// fp32 arena against kModelParamCap.
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
  float* t_proj_b = nullptr;  // [E]  text_projection.bias (proj_bias only)
  // The image tower's parameters are bound by the tower itself (ImageTower::bind).
};

// The state_dict prefix of vision block i (the image tower's ImageTower::block_prefix:
// "visual.transformer.resblocks.i." or, for a timm tower, "visual.trunk.blocks.i.") and of
// text block i ("transformer.resblocks.i.", or "text.transformer.resblocks.i." with custom_text).
std::string vision_block_prefix(const ModelCfg& cfg, int i);
std::string text_block_prefix(const ModelCfg& cfg, int i);

// The parameter `name` in an arena laid out by `table` (an internal error when missing).
float* param_at(const ParamTable& t, float* base, const std::string& name);

// OpenCLIP's ResidualAttentionBlock (the ViT's and the text tower's): its parameters under
// `prefix` (ln_1, attn.in_proj_*, attn.out_proj.*, [ls_1.gamma], ln_2, mlp.c_fc.*, mlp.c_proj.*,
// [ls_2.gamma]) and their binding.
void add_transformer_block(ParamTable& t, const std::string& prefix, int64_t w, int64_t f, bool layer_scale);
BlockParams bind_transformer_block(const ParamTable& t, float* base, const std::string& prefix);

// Binds the text tower's and CLIP's named pointers into `base` (an arena laid out by `table`).
ClipParams bind_params(const ModelCfg& cfg, const ParamTable& table, float* base);

// OpenCLIP's initialisation (CLIP.init_parameters / TextTransformer.init_parameters, the
// image tower's own: ImageTower::init_param), from `seed`: each
// parameter is drawn on the host, in table order, and handed to `emit`.
void init_params_each(const ModelCfg& cfg, const ParamTable& table, uint64_t seed,
                      const std::function<void(const ParamInfo&, std::span<const float>)>& emit);
// Into an arena of `be` (`base` is its memory): one parameter at a time through copy_from_host.
void init_params(const ModelCfg& cfg, const ParamTable& table, ops::Backend& be, float* base, uint64_t seed);

}  // namespace oc
