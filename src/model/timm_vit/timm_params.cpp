// The timm tower's parameters (OpenCLIP 2.24 TimmModel -> visual.trunk = timm 0.9.16's
// VisionTransformer with class_token=False, global_pool='map', num_classes=0; no head
// parameters for timm_proj "none"), in state_dict order: the trunk's own pos_embed first, then
// its submodules patch_embed, blocks, norm, attn_pool.
#include <cmath>

#include "core/check.h"
#include "model/param_init.h"
#include "model/timm_vit/timm_vit_tower.h"

namespace oc {
namespace {

const std::string kTrunk = "visual.trunk.";
const std::string kPool = "visual.trunk.attn_pool.";

void add_linear(ParamTable& t, const std::string& name, int64_t out, int64_t in) {
  t.add(name + ".weight", {out, in});
  t.add(name + ".bias", {out});
}

// timm's Block: norm1, attn (qkv, proj), norm2, mlp (fc1, fc2); ls1/ls2 and q/k norms are
// Identity for the SigLIP models (no parameters).
void add_timm_block(ParamTable& t, const std::string& pre, int64_t w, int64_t f) {
  t.add(pre + "norm1.weight", {w});
  t.add(pre + "norm1.bias", {w});
  add_linear(t, pre + "attn.qkv", 3 * w, w);
  add_linear(t, pre + "attn.proj", w, w);
  t.add(pre + "norm2.weight", {w});
  t.add(pre + "norm2.bias", {w});
  add_linear(t, pre + "mlp.fc1", f, w);
  add_linear(t, pre + "mlp.fc2", w, f);
}

// timm's qkv rows are q|k|v with heads h*D.. inside each, as in_proj's: the same BlockParams.
BlockParams bind_timm_block(const ParamTable& t, float* base, const std::string& pre) {
  auto at = [&](const char* n) { return param_at(t, base, pre + n); };
  return BlockParams{at("norm1.weight"),     at("norm1.bias"),     at("attn.qkv.weight"), at("attn.qkv.bias"),
                     at("attn.proj.weight"), at("attn.proj.bias"), at("norm2.weight"),    at("norm2.bias"),
                     at("mlp.fc1.weight"),   at("mlp.fc1.bias"),   at("mlp.fc2.weight"),  at("mlp.fc2.bias")};
}

}  // namespace

void TimmVitTower::add_params(ParamTable& t) const {
  const auto& v = cfg_.vision;
  const int64_t W = v.width, F = v.mlp_width(), P = v.patch_size;
  t.add(kTrunk + "pos_embed", {1, v.tokens(), W});
  t.add(kTrunk + "patch_embed.proj.weight", {W, 3, P, P});
  t.add(kTrunk + "patch_embed.proj.bias", {W});
  for (int i = 0; i < v.layers; ++i) add_timm_block(t, block_prefix(i), W, F);
  t.add(kTrunk + "norm.weight", {W});
  t.add(kTrunk + "norm.bias", {W});
  t.add(kPool + "latent", {1, 1, W});
  add_linear(t, kPool + "q", W, W);
  add_linear(t, kPool + "kv", 2 * W, W);
  add_linear(t, kPool + "proj", W, W);
  t.add(kPool + "norm.weight", {W});
  t.add(kPool + "norm.bias", {W});
  add_linear(t, kPool + "mlp.fc1", F, W);  // timm's Mlp(embed_dim, int(embed_dim * mlp_ratio))
  add_linear(t, kPool + "mlp.fc2", W, F);
}

// patch_embed, the blocks, and the MAP head: q of one latent, kv of every token, its
// attention, proj and MLP.
double TimmVitTower::forward_macs() const {
  const auto& v = cfg_.vision;
  const double T = v.tokens(), W = v.width;
  double macs = double(v.grid() * v.grid()) * v.width * 3 * v.patch_size * v.patch_size;
  macs += v.layers * transformer_block_macs(T, v.width, v.mlp_width());
  return macs + (W * W * (2 + 2 * T) + 2 * T * W + 2.0 * v.mlp_width() * W);
}

std::string TimmVitTower::describe() const {
  const auto& v = cfg_.vision;
  return fmt::format("{}, {} px, patch {}, {} blocks of width {}{}", v.timm_model_name, v.image_size, v.patch_size,
                     v.layers, v.width, act_ == ops::Act::GeluTanh ? ", GELU tanh" : "");
}

std::string TimmVitTower::block_prefix(int i) const { return kTrunk + "blocks." + std::to_string(i) + "."; }

namespace {
TimmVitParams bind_timm(const ModelCfg& c, const ParamTable& t, float* base, const TimmVitTower& tower) {
  auto at = [&](const std::string& n) { return param_at(t, base, n); };
  TimmVitParams p;
  p.pos = at(kTrunk + "pos_embed");
  p.conv_w = at(kTrunk + "patch_embed.proj.weight");
  p.conv_b = at(kTrunk + "patch_embed.proj.bias");
  p.norm_w = at(kTrunk + "norm.weight");
  p.norm_b = at(kTrunk + "norm.bias");
  for (int i = 0; i < c.vision.layers; ++i) p.blocks.push_back(bind_timm_block(t, base, tower.block_prefix(i)));
  MapHeadParams& m = p.map;
  m.latent = at(kPool + "latent");
  m.q_w = at(kPool + "q.weight"), m.q_b = at(kPool + "q.bias");
  m.kv_w = at(kPool + "kv.weight"), m.kv_b = at(kPool + "kv.bias");
  m.proj_w = at(kPool + "proj.weight"), m.proj_b = at(kPool + "proj.bias");
  m.ln_w = at(kPool + "norm.weight"), m.ln_b = at(kPool + "norm.bias");
  m.fc1_w = at(kPool + "mlp.fc1.weight"), m.fc1_b = at(kPool + "mlp.fc1.bias");
  m.fc2_w = at(kPool + "mlp.fc2.weight"), m.fc2_b = at(kPool + "mlp.fc2.bias");
  return p;
}
}  // namespace

void TimmVitTower::bind(const ParamTable& t, float* params, float* grads) {
  p_ = bind_timm(cfg_, t, params, *this);
  g_ = grads ? bind_timm(cfg_, t, grads, *this) : TimmVitParams{};
}

// timm's init: trunc_normal(0.02) Linear weights, zero biases, pos_embed trunc_normal(0.02),
// latent trunc_normal(W^-0.5), the patch conv PyTorch's default.
bool TimmVitTower::init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const {
  const std::string& n = p.name;
  if (n.rfind(kTrunk, 0) != 0) return false;
  const bool norm = n.find("norm") != std::string::npos;  // norm1, norm2, norm, attn_pool.norm
  if (n == kTrunk + "patch_embed.proj.weight" || n == kTrunk + "patch_embed.proj.bias") {
    // nn.Conv2d's default (timm's init touches only nn.Linear): U(+-1/sqrt(fan_in)).
    const ParamInfo* w = t.find(kTrunk + "patch_embed.proj.weight");
    fill_uniform(out, 1.0 / std::sqrt(double(w->numel / size_t(w->shape[0]))), rng);
  } else if (n == kPool + "latent") {
    fill_trunc_normal(out, std::pow(double(p.shape[2]), -0.5), -2, 2, rng);
  } else if (norm && ends_with(n, ".weight")) {
    std::fill(out.begin(), out.end(), 1.0f);
  } else if (ends_with(n, ".bias")) {
    std::fill(out.begin(), out.end(), 0.0f);
  } else if (ends_with(n, ".weight") || n == kTrunk + "pos_embed") {
    fill_trunc_normal(out, 0.02, -100, 100, rng);  // init_weights_vit_timm; pos_embed the same
  } else {
    OC_FAIL("no initialisation rule for parameter {}", n);
  }
  return true;
}

}  // namespace oc
