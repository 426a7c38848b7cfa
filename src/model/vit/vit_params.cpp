// The ViT tower's parameters under OpenCLIP's names (VisionTransformer's state_dict:
// class_embedding, positional_embedding, proj, then the submodules conv1, ln_pre, transformer,
// ln_post), their initialisation and their lock groups.
#include <cmath>

#include "core/check.h"
#include "core/log.h"
#include "model/config_limits.h"
#include "model/param_init.h"
#include "model/pos_embed_resize.h"
#include "model/vit/vit_tower.h"

namespace oc {

// The patch grid covers the image (OpenCLIP's conv1 would drop the remainder, its
// positional embedding would not); whole heads.
void VisionTower::check_config(const std::string& w) const {
  const auto& v = cfg_.vision;
  if (v.image_size % v.patch_size)
    OC_USER_ERROR("{}: image_size {} is not a multiple of patch_size {}", w, v.image_size, v.patch_size);
  check_head_width(v, w);
}

void VisionTower::add_params(ParamTable& t) const {
  const auto& v = cfg_.vision;
  t.add("visual.class_embedding", {v.width});
  t.add("visual.positional_embedding", {v.tokens(), v.width});
  t.add("visual.proj", {v.width, cfg_.embed_dim});
  t.add("visual.conv1.weight", {v.width, 3, v.patch_size, v.patch_size});
  if (!v.no_ln_pre) {
    t.add("visual.ln_pre.weight", {v.width});
    t.add("visual.ln_pre.bias", {v.width});
  }
  for (int i = 0; i < v.layers; ++i)
    add_transformer_block(t, block_prefix(i), v.width, v.mlp_width(), v.ls_init_value.has_value());
  t.add("visual.ln_post.weight", {v.width});
  t.add("visual.ln_post.bias", {v.width});
}

// conv1 on the patches, the blocks over every token, proj.
double VisionTower::forward_macs() const {
  const auto& v = cfg_.vision;
  const double T = v.tokens(), patches = double(v.grid() * v.grid()) * v.width * 3 * v.patch_size * v.patch_size;
  return patches + v.layers * transformer_block_macs(T, v.width, v.mlp_width()) + double(v.width) * cfg_.embed_dim;
}

std::string VisionTower::describe() const {
  const auto& v = cfg_.vision;
  return fmt::format("{} px, patch {}, {} blocks of width {}", v.image_size, v.patch_size, v.layers, v.width);
}

std::string VisionTower::block_prefix(int i) const { return "visual.transformer.resblocks." + std::to_string(i) + "."; }

void VisionTower::adapt_pretrained(std::vector<std::pair<std::string, HostTensor>>& sd) const {
  const auto& v = cfg_.vision;
  for (auto& [name, pos] : sd)
    if (name == "visual.positional_embedding" && pos.shape.size() == 2 && pos.shape[0] != v.tokens()) {
      log::info("Resizing position embedding grid-size from {0}x{0} to {1}x{1}",
                int(std::sqrt(double(pos.shape[0] - 1))), v.grid());
      pos = resize_pos_embed(pos, v.grid(), "visual.positional_embedding");
      return;
    }
}

namespace {
VitParams bind_vit(const ModelCfg& c, const ParamTable& t, float* base, const VisionTower& tower) {
  auto at = [&](const std::string& n) { return param_at(t, base, n); };
  VitParams p;
  p.v_cls = at("visual.class_embedding");
  p.v_pos = at("visual.positional_embedding");
  p.v_proj = at("visual.proj");
  p.v_conv = at("visual.conv1.weight");
  if (!c.vision.no_ln_pre) p.ln_pre_w = at("visual.ln_pre.weight"), p.ln_pre_b = at("visual.ln_pre.bias");
  p.ln_post_w = at("visual.ln_post.weight");
  p.ln_post_b = at("visual.ln_post.bias");
  for (int i = 0; i < c.vision.layers; ++i)
    p.v_blocks.push_back(bind_transformer_block(t, base, tower.block_prefix(i)));
  return p;
}
}  // namespace

void VisionTower::bind(const ParamTable& t, float* params, float* grads) {
  p_ = bind_vit(cfg_, t, params, *this);
  g_ = grads ? bind_vit(cfg_, t, grads, *this) : VitParams{};
}

// VisionTransformer.init_parameters: class_embedding, positional_embedding and proj
// randn * width^-0.5; the rest PyTorch's defaults (nn.MultiheadAttention's xavier_uniform
// in_proj, nn.Linear's and nn.Conv2d's kaiming_uniform(a=sqrt 5) = U(+-1/sqrt(fan_in)),
// LayerNorm 1 / 0, zero attention biases); LayerScale gammas ls_init_value.
bool VisionTower::init_param(const ParamInfo& p, const ParamTable& t, std::span<float> d, Rng& rng) const {
  const std::string& n = p.name;
  if (n.rfind("visual.", 0) != 0) return false;
  auto ends = [&](const char* s) { return ends_with(n, s); };
  if (ends("ls_1.gamma") || ends("ls_2.gamma")) {
    fill_value(d, float(*cfg_.vision.ls_init_value));
  } else if (n == "visual.class_embedding" || n == "visual.positional_embedding" || n == "visual.proj") {
    fill_normal(d, std::pow(double(cfg_.vision.width), -0.5), rng);
  } else if (ends(".weight") && n.find("ln_") != std::string::npos) {
    fill_value(d, 1.0f);
  } else if (ends("in_proj_bias") || ends("out_proj.bias") || (ends(".bias") && n.find(".ln_") != std::string::npos)) {
    fill_value(d, 0.0f);
  } else if (n == "visual.conv1.weight") {
    fill_uniform(d, 1.0 / std::sqrt(double(p.numel / p.shape[0])), rng);
  } else if (ends("in_proj_weight")) {
    fill_uniform(d, std::sqrt(6.0 / double(p.shape[0] + p.shape[1])), rng);
  } else if (ends("out_proj.weight") || ends("c_proj.weight") || ends("c_fc.weight")) {
    fill_uniform(d, 1.0 / std::sqrt(double(p.shape[1])), rng);
  } else if (ends("c_fc.bias") || ends("c_proj.bias")) {
    const ParamInfo* w = t.find(n.substr(0, n.size() - 4) + "weight");
    OC_CHECK(w, "no weight for {}", n);
    fill_uniform(d, 1.0 / std::sqrt(double(w->shape[1])), rng);
  } else {
    OC_FAIL("no initialisation rule for parameter {}", n);
  }
  return true;
}

// OpenCLIP's VisionTransformer.lock groups, with L blocks: 0 = conv1, class and positional
// embedding (+ ln_pre), 1..L-1 = blocks 0..L-2, L = [last block, ln_post], L+1 = proj.
int VisionTower::lock_group(const std::string& n) const {
  const int L = cfg_.vision.layers;
  const std::string blocks = "visual.transformer.resblocks.";
  if (n.rfind(blocks, 0) == 0) {
    const int b = std::stoi(n.substr(blocks.size()));
    return b == L - 1 ? L : b + 1;
  }
  if (n == "visual.conv1.weight" || n == "visual.class_embedding" || n == "visual.positional_embedding" ||
      n.rfind("visual.ln_pre.", 0) == 0)
    return 0;
  if (n.rfind("visual.ln_post.", 0) == 0) return L;
  if (n == "visual.proj") return L + 1;
  return -1;
}

}  // namespace oc
