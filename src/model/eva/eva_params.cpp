// The EVA02 tower's parameters (OpenCLIP 2.24 TimmModel -> visual.trunk = timm 0.9.16's Eva with
// num_classes = embed_dim), in state_dict order: cls_token, pos_embed, patch_embed, blocks,
// norm, head. The rotary table (trunk.rope.pos_embed) is a non-persistent buffer: not here.
#include <cmath>
#include <string>

#include "core/check.h"
#include "model/eva/eva_tower.h"
#include "model/param_init.h"
#include "model/transformer.h"

namespace oc {
namespace {

const std::string kTrunk = "visual.trunk.";

void add_linear(ParamTable& t, const std::string& name, int64_t out, int64_t in, bool bias = true) {
  t.add(name + ".weight", {out, in});
  if (bias) t.add(name + ".bias", {out});
}

void add_norm(ParamTable& t, const std::string& name, int64_t w) {
  t.add(name + ".weight", {w});
  t.add(name + ".bias", {w});
}

// timm's EvaBlock with qkv_fused=False, scale_attn_inner, swiglu_mlp and scale_mlp.
void add_eva_block(ParamTable& t, const std::string& pre, int64_t w, int64_t f) {
  add_norm(t, pre + "norm1", w);
  add_linear(t, pre + "attn.q_proj", w, w);
  add_linear(t, pre + "attn.k_proj", w, w, /*bias=*/false);
  add_linear(t, pre + "attn.v_proj", w, w);
  add_norm(t, pre + "attn.norm", w);
  add_linear(t, pre + "attn.proj", w, w);
  add_norm(t, pre + "norm2", w);
  add_linear(t, pre + "mlp.fc1_g", f, w);
  add_linear(t, pre + "mlp.fc1_x", f, w);
  add_norm(t, pre + "mlp.norm", f);
  add_linear(t, pre + "mlp.fc2", w, f);
}

EvaBlockParams bind_eva_block(const ParamTable& t, float* base, const std::string& pre) {
  auto at = [&](const char* n) { return param_at(t, base, pre + n); };
  EvaBlockParams b{};
  b.ln1_w = at("norm1.weight"), b.ln1_b = at("norm1.bias");
  b.q_w = at("attn.q_proj.weight"), b.q_b = at("attn.q_proj.bias"), b.k_w = at("attn.k_proj.weight");
  b.v_w = at("attn.v_proj.weight"), b.v_b = at("attn.v_proj.bias");
  b.an_w = at("attn.norm.weight"), b.an_b = at("attn.norm.bias");
  b.proj_w = at("attn.proj.weight"), b.proj_b = at("attn.proj.bias");
  b.ln2_w = at("norm2.weight"), b.ln2_b = at("norm2.bias");
  b.g_w = at("mlp.fc1_g.weight"), b.g_b = at("mlp.fc1_g.bias");
  b.x_w = at("mlp.fc1_x.weight"), b.x_b = at("mlp.fc1_x.bias");
  b.mn_w = at("mlp.norm.weight"), b.mn_b = at("mlp.norm.bias");
  b.fc2_w = at("mlp.fc2.weight"), b.fc2_b = at("mlp.fc2.bias");
  return b;
}

EvaParams bind_eva(const ModelCfg& c, const ParamTable& t, float* base, const EvaTower& tower) {
  auto at = [&](const std::string& n) { return param_at(t, base, kTrunk + n); };
  EvaParams p;
  p.cls = at("cls_token"), p.pos = at("pos_embed");
  p.conv_w = at("patch_embed.proj.weight"), p.conv_b = at("patch_embed.proj.bias");
  for (int i = 0; i < c.vision.layers; ++i) p.blocks.push_back(bind_eva_block(t, base, tower.block_prefix(i)));
  p.norm_w = at("norm.weight"), p.norm_b = at("norm.bias");
  p.head_w = at("head.weight"), p.head_b = at("head.bias");
  return p;
}

// timm's trunc_normal_(std=0.02) truncates at +-2 absolute (+-100 std): a plain normal.
void fill_trunc_normal(std::span<float> out, double std, Rng& rng) {
  for (float& x : out) {
    double z = rng.normal();
    while (z < -100 || z > 100) z = rng.normal();
    x = float(z * std);
  }
}

// The block index of "visual.trunk.blocks.<i>....", or -1.
int block_of(const std::string& n) {
  const std::string pre = kTrunk + "blocks.";
  return n.rfind(pre, 0) == 0 ? std::stoi(n.substr(pre.size())) : -1;
}

}  // namespace

void EvaTower::add_params(ParamTable& t) const {
  const auto& v = cfg_.vision;
  const int64_t W = v.width, F = v.mlp_width(), P = v.patch_size, G = v.grid();
  t.add(kTrunk + "cls_token", {1, 1, W});
  t.add(kTrunk + "pos_embed", {1, 1 + G * G, W});
  t.add(kTrunk + "patch_embed.proj.weight", {W, 3, P, P});
  t.add(kTrunk + "patch_embed.proj.bias", {W});
  for (int i = 0; i < v.layers; ++i) add_eva_block(t, block_prefix(i), W, F);
  add_norm(t, kTrunk + "norm", W);
  add_linear(t, kTrunk + "head", cfg_.embed_dim, W);
}

void EvaTower::bind(const ParamTable& t, float* params, float* grads) {
  p_ = bind_eva(cfg_, t, params, *this);
  g_ = grads ? bind_eva(cfg_, t, grads, *this) : EvaParams{};
}

std::string EvaTower::block_prefix(int i) const { return kTrunk + "blocks." + std::to_string(i) + "."; }

std::string EvaTower::describe() const {
  const auto& v = cfg_.vision;
  return fmt::format("{}, {} px, patch {}, {} blocks of width {} (rotary embedding, SwiGLU {})", v.timm_model_name,
                     v.image_size, v.patch_size, v.layers, v.width, v.mlp_width());
}

// patch_embed; per block q/k/v/proj (4 W^2), fc1_g/fc1_x/fc2 (3 F W) and attention's two
// products; the head on the class token.
double EvaTower::forward_macs() const {
  const auto& v = cfg_.vision;
  const double G2 = double(v.grid()) * v.grid(), T = G2 + 1, W = v.width, F = v.mlp_width();
  const double block = T * (4 * W * W + 3 * F * W) + 2 * T * T * W;
  return G2 * W * 3 * v.patch_size * v.patch_size + v.layers * block + W * cfg_.embed_dim;
}

// timm's Eva init: trunc_normal(0.02) for pos_embed, cls_token and every Linear weight, zero
// biases, LayerNorms 1/0; fix_init_weight divides block i's attn.proj and mlp.fc2 weights by
// sqrt(2 (i + 1)); the head is scaled by head_init_scale 0.001; the patch conv keeps PyTorch's
// default U(+-1/sqrt(fan_in)).
bool EvaTower::init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const {
  const std::string& n = p.name;
  if (n.rfind(kTrunk, 0) != 0) return false;
  const std::string conv = kTrunk + "patch_embed.proj.";
  if (n.rfind(conv, 0) == 0) {
    const ParamInfo* w = t.find(conv + "weight");
    fill_uniform(out, 1.0 / std::sqrt(double(w->numel / size_t(w->shape[0]))), rng);
  } else if (n.find("norm") != std::string::npos) {
    fill_value(out, ends_with(n, ".weight") ? 1.0f : 0.0f);
  } else if (ends_with(n, ".bias")) {
    fill_value(out, 0.0f);
  } else {
    fill_trunc_normal(out, 0.02, rng);
    double scale = 1;
    if (ends_with(n, "attn.proj.weight") || ends_with(n, "mlp.fc2.weight"))
      scale = 1 / std::sqrt(2.0 * (block_of(n) + 1));
    if (n == kTrunk + "head.weight") scale = 0.001;
    for (float& x : out) x = float(x * scale);
  }
  return true;
}

}  // namespace oc
