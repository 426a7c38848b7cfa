#include "model/params.h"

#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/checked.h"
#include "core/limits.h"
#include "model/config_limits.h"
#include "core/rng.h"

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

void add_block(ParamTable& t, const std::string& prefix, int64_t w, int64_t f, bool layer_scale) {
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
    add_block(t, text_block_prefix(c, i), x.width, x.mlp_width(), x.ls_init_value.has_value());
  if (!c.custom_text) add(t, "token_embedding.weight", {x.vocab_size, x.width});
  add(t, tp + "ln_final.weight", {x.width});
  add(t, tp + "ln_final.bias", {x.width});
  if (x.proj_bias) {  // an nn.Linear: a submodule, so after ln_final in the state_dict
    add(t, tp + "text_projection.weight", {c.embed_dim, x.width});
    add(t, tp + "text_projection.bias", {c.embed_dim});
  }
}

}  // namespace

std::string vision_block_prefix(const ModelCfg& c, int i) {
  return (c.vision.timm() ? "visual.trunk.blocks." : "visual.transformer.resblocks.") + std::to_string(i) + ".";
}
std::string text_block_prefix(const ModelCfg& c, int i) {
  return text_prefix(c) + "transformer.resblocks." + std::to_string(i) + ".";
}

ParamTable make_param_table(const ModelCfg& c) {
  ParamTable t;
  const auto& v = c.vision;
  if (!c.custom_text) add_text_params(t, c);
  add(t, "logit_scale", {});
  if (c.init_logit_bias) add(t, "logit_bias", {});  // OpenCLIP registers it right after logit_scale
  if (v.timm()) {
    add_timm_vision_params(t, c);
  } else if (v.resnet()) {
    add_resnet_params(t, c);
  } else {
    add(t, "visual.class_embedding", {v.width});
    add(t, "visual.positional_embedding", {v.tokens(), v.width});
    add(t, "visual.proj", {v.width, c.embed_dim});
    add(t, "visual.conv1.weight", {v.width, 3, v.patch_size, v.patch_size});
    if (!v.no_ln_pre) {
      add(t, "visual.ln_pre.weight", {v.width});
      add(t, "visual.ln_pre.bias", {v.width});
    }
    for (int i = 0; i < v.layers; ++i)
      add_block(t, vision_block_prefix(c, i), v.width, v.mlp_width(), v.ls_init_value.has_value());
    add(t, "visual.ln_post.weight", {v.width});
    add(t, "visual.ln_post.bias", {v.width});
  }
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

BlockParams bind_block(const ParamTable& t, float* base, const std::string& pre) {
  BlockParams b{at(t, base, pre + "ln_1.weight"),          at(t, base, pre + "ln_1.bias"),
          at(t, base, pre + "attn.in_proj_weight"),  at(t, base, pre + "attn.in_proj_bias"),
          at(t, base, pre + "attn.out_proj.weight"), at(t, base, pre + "attn.out_proj.bias"),
          at(t, base, pre + "ln_2.weight"),          at(t, base, pre + "ln_2.bias"),
          at(t, base, pre + "mlp.c_fc.weight"),      at(t, base, pre + "mlp.c_fc.bias"),
          at(t, base, pre + "mlp.c_proj.weight"),    at(t, base, pre + "mlp.c_proj.bias")};
  if (t.find(pre + "ls_1.gamma")) b.ls1 = at(t, base, pre + "ls_1.gamma"), b.ls2 = at(t, base, pre + "ls_2.gamma");
  return b;
}
}  // namespace

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
  for (int i = 0; i < c.text.layers; ++i) p.t_blocks.push_back(bind_block(t, base, text_block_prefix(c, i)));
  if (c.vision.timm()) {
    bind_timm_vision(c, t, base, &p);
    return p;
  }
  if (c.vision.resnet()) {
    p.rn = bind_resnet_params(c, t, base);
    p.v_cls = p.v_pos = p.v_proj = p.v_conv = p.ln_pre_w = p.ln_pre_b = p.ln_post_w = p.ln_post_b = nullptr;
    return p;
  }
  p.v_cls = at(t, base, "visual.class_embedding");
  p.v_pos = at(t, base, "visual.positional_embedding");
  p.v_proj = at(t, base, "visual.proj");
  p.v_conv = at(t, base, "visual.conv1.weight");
  if (!c.vision.no_ln_pre) {
    p.ln_pre_w = at(t, base, "visual.ln_pre.weight");
    p.ln_pre_b = at(t, base, "visual.ln_pre.bias");
  } else {
    p.ln_pre_w = p.ln_pre_b = nullptr;
  }
  p.ln_post_w = at(t, base, "visual.ln_post.weight");
  p.ln_post_b = at(t, base, "visual.ln_post.bias");
  for (int i = 0; i < c.vision.layers; ++i) p.v_blocks.push_back(bind_block(t, base, vision_block_prefix(c, i)));
  return p;
}

namespace {
void fill_normal(float* p, size_t n, double std, Rng& rng) {
  for (size_t i = 0; i < n; ++i) p[i] = float(rng.normal() * std);
}
void fill_uniform(float* p, size_t n, double bound, Rng& rng) {
  for (size_t i = 0; i < n; ++i) p[i] = float((2 * rng.uniform() - 1) * bound);
}
void fill(float* p, size_t n, float v) {
  for (size_t i = 0; i < n; ++i) p[i] = v;
}
}  // namespace

void init_params(const ModelCfg& c, const ParamTable& t, ops::Backend& be, float* base, uint64_t seed) {
  init_params_each(c, t, seed, [&](const ParamInfo& p, std::span<const float> v) {
    be.copy_from_host(base + p.offset, v.data(), v.size_bytes());
  });
}

void init_params_each(const ModelCfg& c, const ParamTable& t, uint64_t seed,
                      const std::function<void(const ParamInfo&, std::span<const float>)>& emit) {
  Rng rng(seed);
  std::vector<float> host;  // one parameter at a time
  const double tw = c.text.width, vw = c.vision.width;
  const double attn_std = std::pow(tw, -0.5);
  const double proj_std = std::pow(tw, -0.5) * std::pow(2.0 * c.text.layers, -0.5);
  const double fc_std = std::pow(2.0 * tw, -0.5);
  const std::string tp = text_prefix(c);
  for (auto& p : t.params) {
    host.assign(p.numel, 0.0f);
    float* d = host.data();
    if (init_timm_param(p, t, host, rng)) {
      emit(p, host);
      continue;
    }
    // The text tower's rules by CLIP's names (custom_text: without the text. prefix).
    const std::string n = !tp.empty() && p.name.rfind(tp, 0) == 0 ? p.name.substr(tp.size()) : p.name;
    const bool vis = n.rfind("visual.", 0) == 0;
    if (vis && c.vision.resnet()) {
      OC_CHECK(init_resnet_param(c, p, d, rng), "no initialisation rule for parameter {}", n);
      emit(p, host);
      continue;
    }
    auto ends = [&](const char* s) {
      std::string_view sv(s);
      return n.size() >= sv.size() && n.compare(n.size() - sv.size(), sv.size(), sv) == 0;
    };
    if (n == "logit_scale") {
      d[0] = float(c.init_logit_scale);
    } else if (n == "logit_bias") {
      d[0] = float(*c.init_logit_bias);
    } else if (n == "token_embedding.weight") {
      fill_normal(d, p.numel, 0.02, rng);
    } else if (n == "positional_embedding") {
      fill_normal(d, p.numel, 0.01, rng);
    } else if (n == "text_projection" || n == "text_projection.weight") {
      fill_normal(d, p.numel, attn_std, rng);  // nn.Parameter or nn.Linear weight: std width^-0.5
    } else if (n == "text_projection.bias") {
      fill(d, p.numel, 0.0f);
    } else if (ends("ls_1.gamma") || ends("ls_2.gamma")) {
      fill(d, p.numel, float(*(vis ? c.vision.ls_init_value : c.text.ls_init_value)));
    } else if (n == "visual.class_embedding" || n == "visual.positional_embedding" || n == "visual.proj") {
      fill_normal(d, p.numel, std::pow(vw, -0.5), rng);
    } else if (ends(".weight") && (n.find("ln_") != std::string::npos || n.find("ln_final") != std::string::npos)) {
      fill(d, p.numel, 1.0f);
    } else if (ends("in_proj_bias") || ends("out_proj.bias") || (ends(".bias") && n.find(".ln_") != std::string::npos) ||
               n == "ln_final.bias" || n == "visual.ln_pre.bias" || n == "visual.ln_post.bias") {
      fill(d, p.numel, 0.0f);
    } else if (n == "visual.conv1.weight") {
      fill_uniform(d, p.numel, 1.0 / std::sqrt(double(p.numel / p.shape[0])), rng);  // kaiming_uniform(a=sqrt 5)
    } else if (ends("in_proj_weight")) {
      if (vis)  // nn.MultiheadAttention default: xavier_uniform over [3W, W]
        fill_uniform(d, p.numel, std::sqrt(6.0 / double(p.shape[0] + p.shape[1])), rng);
      else
        fill_normal(d, p.numel, attn_std, rng);
    } else if (ends("out_proj.weight") || ends("c_proj.weight") || ends("c_fc.weight")) {
      if (vis)  // nn.Linear default: kaiming_uniform(a=sqrt 5) = U(+-1/sqrt(fan_in))
        fill_uniform(d, p.numel, 1.0 / std::sqrt(double(p.shape[1])), rng);
      else
        fill_normal(d, p.numel, ends("c_fc.weight") ? fc_std : proj_std, rng);
    } else if (ends("c_fc.bias") || ends("c_proj.bias")) {
      // nn.Linear default bias: U(+-1/sqrt(fan_in)); fan_in = the weight's columns.
      const ParamInfo* w = t.find(p.name.substr(0, p.name.size() - 4) + "weight");
      OC_CHECK(w, "no weight for {}", n);
      fill_uniform(d, p.numel, 1.0 / std::sqrt(double(w->shape[1])), rng);
    } else {
      OC_FAIL("no initialisation rule for parameter {}", n);
    }
    emit(p, host);
  }
}

}  // namespace oc
