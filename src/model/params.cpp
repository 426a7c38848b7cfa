#include "model/params.h"

#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/checked.h"
#include "core/limits.h"
#include "core/rng.h"
#include "model/config_limits.h"
#include "model/image_tower.h"
#include "model/param_init.h"

namespace oc {

int64_t ParamTable::count() const {
  int64_t n = 0;
  for (auto& p : params)
    if (!p.buffer) n += int64_t(p.numel);
  return n;
}

const ParamInfo* ParamTable::find(const std::string& name) const {
  for (auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

namespace {
bool no_decay(const std::string& name, const Shape& shape);
}  // namespace

// Sizes through core/checked.h: validate_model_numbers bounds every factor, and this keeps
// any combination of them from wrapping.
void ParamTable::add(std::string name, Shape shape, bool buffer) {
  ParamInfo p;
  p.decay = !buffer && !no_decay(name, shape);
  p.buffer = buffer;
  int64_t n = 1;
  for (int64_t d : shape) n = checked_mul(name, {n, d});
  p.name = std::move(name);
  p.numel = size_t(n);
  p.shape = std::move(shape);
  p.offset = total;
  total = size_t(checked_add(p.name, {int64_t(total), checked_round_up(p.name, n, 16)}));  // 64-byte aligned
  params.push_back(std::move(p));
}

namespace {

bool no_decay(const std::string& name, const Shape& shape) {
  return shape.size() < 2 || name.find("bn") != std::string::npos || name.find("ln") != std::string::npos ||
         name.find("bias") != std::string::npos || name.find("logit_scale") != std::string::npos;
}

void add(ParamTable& t, std::string name, Shape shape) { t.add(std::move(name), std::move(shape)); }

}  // namespace

void add_transformer_block(ParamTable& t, const std::string& prefix, int64_t w, int64_t f, bool layer_scale) {
  add(t, prefix + "ln_1.weight", {w});
  add(t, prefix + "ln_1.bias", {w});
  add(t, prefix + "attn.in_proj_weight", {3 * w, w});
  add(t, prefix + "attn.in_proj_bias", {3 * w});
  add(t, prefix + "attn.out_proj.weight", {w, w});
  add(t, prefix + "attn.out_proj.bias", {w});
  if (layer_scale) add(t, prefix + "ls_1.gamma", {w});
  add(t, prefix + "ln_2.weight", {w});
  add(t, prefix + "ln_2.bias", {w});
  add(t, prefix + "mlp.c_fc.weight", {f, w});
  add(t, prefix + "mlp.c_fc.bias", {f});
  add(t, prefix + "mlp.c_proj.weight", {w, f});
  add(t, prefix + "mlp.c_proj.bias", {w});
  if (layer_scale) add(t, prefix + "ls_2.gamma", {w});
}

namespace {

// "text." with custom_text (CustomTextCLIP keeps its TextTransformer as a submodule).
std::string text_prefix(const ModelCfg& c) { return c.custom_text ? "text." : ""; }

// The text tower's own parameters (an nn.Parameter projection with them); CLIP flattens these
// to the front of its state_dict, CustomTextCLIP has them first under text.*.
void add_text_params(ParamTable& t, const ModelCfg& c) {
  const std::string tp = text_prefix(c);
  add(t, tp + "positional_embedding", {c.text.context_length, c.text.width});
  if (!c.text.proj_bias) add(t, tp + "text_projection", {c.text.width, c.embed_dim});  // an nn.Parameter
}

// The text tower's submodules: CLIP's token_embedding is registered after its transformer,
// TextTransformer's before it.
void add_text_modules(ParamTable& t, const ModelCfg& c) {
  const auto& x = c.text;
  const std::string tp = text_prefix(c);
  if (c.custom_text) add(t, tp + "token_embedding.weight", {x.vocab_size, x.width});
  for (int i = 0; i < x.layers; ++i)
    add_transformer_block(t, text_block_prefix(c, i), x.width, x.mlp_width(), x.ls_init_value.has_value());
  if (!c.custom_text) add(t, "token_embedding.weight", {x.vocab_size, x.width});
  add(t, tp + "ln_final.weight", {x.width});
  add(t, tp + "ln_final.bias", {x.width});
  if (x.proj_bias) {  // an nn.Linear: a submodule, so after ln_final in the state_dict
    add(t, tp + "text_projection.weight", {c.embed_dim, x.width});
    add(t, tp + "text_projection.bias", {c.embed_dim});
  }
}

}  // namespace

std::string vision_block_prefix(const ModelCfg& c, int i) { return make_image_tower(c)->block_prefix(i); }
std::string text_block_prefix(const ModelCfg& c, int i) {
  return text_prefix(c) + "transformer.resblocks." + std::to_string(i) + ".";
}

ParamTable make_param_table(const ModelCfg& c) {
  ParamTable t;
  if (!c.custom_text) add_text_params(t, c);
  add(t, "logit_scale", {});
  if (c.init_logit_bias) add(t, "logit_bias", {});  // OpenCLIP registers it right after logit_scale
  make_image_tower(c)->add_params(t);
  if (c.custom_text) add_text_params(t, c);
  add_text_modules(t, c);
  const std::string what = "model " + c.name + " parameters";
  if (auto s = within_cap(what, "the fp32 parameters", uint64_t(checked_mul(what, {int64_t(t.total), 4})),
                          kModelParamCap);
      !s)
    OC_USER_ERROR("{}", s.error());
  return t;
}

float* param_at(const ParamTable& t, float* base, const std::string& name) {
  const ParamInfo* p = t.find(name);
  OC_CHECK(p, "parameter {} missing from the table", name);
  return base + p->offset;
}

namespace {
float* at(const ParamTable& t, float* base, const std::string& name) { return param_at(t, base, name); }
}  // namespace

BlockParams bind_transformer_block(const ParamTable& t, float* base, const std::string& pre) {
  BlockParams b{at(t, base, pre + "ln_1.weight"),          at(t, base, pre + "ln_1.bias"),
          at(t, base, pre + "attn.in_proj_weight"),  at(t, base, pre + "attn.in_proj_bias"),
          at(t, base, pre + "attn.out_proj.weight"), at(t, base, pre + "attn.out_proj.bias"),
          at(t, base, pre + "ln_2.weight"),          at(t, base, pre + "ln_2.bias"),
          at(t, base, pre + "mlp.c_fc.weight"),      at(t, base, pre + "mlp.c_fc.bias"),
          at(t, base, pre + "mlp.c_proj.weight"),    at(t, base, pre + "mlp.c_proj.bias")};
  if (t.find(pre + "ls_1.gamma")) b.ls1 = at(t, base, pre + "ls_1.gamma"), b.ls2 = at(t, base, pre + "ls_2.gamma");
  return b;
}

ClipParams bind_params(const ModelCfg& c, const ParamTable& t, float* base) {
  ClipParams p;
  const std::string tp = text_prefix(c);
  p.t_pos = at(t, base, tp + "positional_embedding");
  if (c.text.proj_bias) {
    p.t_proj = at(t, base, tp + "text_projection.weight");
    p.t_proj_b = at(t, base, tp + "text_projection.bias");
  } else {
    p.t_proj = at(t, base, tp + "text_projection");
  }
  p.logit_scale = at(t, base, "logit_scale");
  if (c.init_logit_bias) p.logit_bias = at(t, base, "logit_bias");
  p.tok_emb = at(t, base, tp + "token_embedding.weight");
  p.ln_final_w = at(t, base, tp + "ln_final.weight");
  p.ln_final_b = at(t, base, tp + "ln_final.bias");
  for (int i = 0; i < c.text.layers; ++i)
    p.t_blocks.push_back(bind_transformer_block(t, base, text_block_prefix(c, i)));
  return p;
}

void init_params(const ModelCfg& c, const ParamTable& t, ops::Backend& be, float* base, uint64_t seed) {
  init_params_each(c, t, seed, [&](const ParamInfo& p, std::span<const float> v) {
    be.copy_from_host(base + p.offset, v.data(), v.size_bytes());
  });
}

namespace {
// The text tower's and CLIP's rules (TextTransformer.init_parameters, CLIP's logit_scale) by
// CLIP's names (custom_text: without the text. prefix).
void init_text_param(const ModelCfg& c, const ParamInfo& p, const std::string& n, const ParamTable& t,
                     std::span<float> d, Rng& rng) {
  const double tw = c.text.width;
  const double attn_std = std::pow(tw, -0.5);
  const double proj_std = std::pow(tw, -0.5) * std::pow(2.0 * c.text.layers, -0.5);
  const double fc_std = std::pow(2.0 * tw, -0.5);
  auto ends = [&](const char* s) { return ends_with(n, s); };
  if (n == "logit_scale") {
    d[0] = float(c.init_logit_scale);
  } else if (n == "logit_bias") {
    d[0] = float(*c.init_logit_bias);
  } else if (n == "token_embedding.weight") {
    fill_normal(d, 0.02, rng);
  } else if (n == "positional_embedding") {
    fill_normal(d, 0.01, rng);
  } else if (n == "text_projection" || n == "text_projection.weight") {
    fill_normal(d, attn_std, rng);  // nn.Parameter or nn.Linear weight: std width^-0.5
  } else if (n == "text_projection.bias") {
    fill_value(d, 0.0f);
  } else if (ends("ls_1.gamma") || ends("ls_2.gamma")) {
    fill_value(d, float(*c.text.ls_init_value));
  } else if (ends(".weight") && n.find("ln_") != std::string::npos) {
    fill_value(d, 1.0f);
  } else if (ends("in_proj_bias") || ends("out_proj.bias") || (ends(".bias") && n.find(".ln_") != std::string::npos) ||
             n == "ln_final.bias") {
    fill_value(d, 0.0f);
  } else if (ends("in_proj_weight")) {
    fill_normal(d, attn_std, rng);
  } else if (ends("out_proj.weight") || ends("c_proj.weight") || ends("c_fc.weight")) {
    fill_normal(d, ends("c_fc.weight") ? fc_std : proj_std, rng);
  } else if (ends("c_fc.bias") || ends("c_proj.bias")) {
    // nn.Linear default bias: U(+-1/sqrt(fan_in)); fan_in = the weight's columns.
    const ParamInfo* w = t.find(p.name.substr(0, p.name.size() - 4) + "weight");
    OC_CHECK(w, "no weight for {}", n);
    fill_uniform(d, 1.0 / std::sqrt(double(w->shape[1])), rng);
  } else {
    OC_FAIL("no initialisation rule for parameter {}", n);
  }
}
}  // namespace

void init_params_each(const ModelCfg& c, const ParamTable& t, uint64_t seed,
                      const std::function<void(const ParamInfo&, std::span<const float>)>& emit) {
  Rng rng(seed);
  std::vector<float> host;  // one parameter at a time
  const std::string tp = text_prefix(c);
  const std::unique_ptr<ImageTower> image = make_image_tower(c);
  for (auto& p : t.params) {
    host.assign(p.numel, 0.0f);
    if (!image->init_param(p, t, host, rng)) {
      const std::string n = !tp.empty() && p.name.rfind(tp, 0) == 0 ? p.name.substr(tp.size()) : p.name;
      init_text_param(c, p, n, t, host, rng);
    }
    emit(p, host);
  }
}

}  // namespace oc
