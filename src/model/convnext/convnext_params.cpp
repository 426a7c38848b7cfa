// The ConvNeXt tower's parameters (OpenCLIP 2.24 TimmModel: visual.trunk = timm 0.9.16's
// ConvNeXt with its classifier reset to num_classes 0, visual.head = TimmModel's projection),
// in state_dict order: stem, stages (each block's own gamma before its submodules), the
// trunk's head.norm, then visual.head.
#include <cmath>

#include "core/check.h"
#include "model/convnext/convnext_tower.h"
#include "model/param_init.h"

namespace oc {
namespace {

const std::string kTrunk = "visual.trunk.";
constexpr int64_t kDwK = 7;  // ConvNeXt's kernel_sizes (7 in every stage of every model)

std::string stage_prefix(int s) { return kTrunk + "stages." + std::to_string(s) + "."; }
std::string block_name(int s, int b) { return stage_prefix(s) + "blocks." + std::to_string(b) + "."; }

void add_wb(ParamTable& t, const std::string& name, Shape w, int64_t bias) {
  t.add(name + ".weight", std::move(w));
  t.add(name + ".bias", {bias});
}

// ConvNeXtBlock: gamma (a parameter of the block itself: first), conv_dw, norm, mlp.fc1/fc2.
void add_block(ParamTable& t, const std::string& pre, int64_t C) {
  t.add(pre + "gamma", {C});
  add_wb(t, pre + "conv_dw", {C, 1, kDwK, kDwK}, C);
  add_wb(t, pre + "norm", {C}, C);
  add_wb(t, pre + "mlp.fc1", {4 * C, C}, 4 * C);
  add_wb(t, pre + "mlp.fc2", {C, 4 * C}, C);
}

ConvNextParams bind_convnext(const VisionCfg& v, const ConvNextSpec& spec, const ParamTable& t, float* base) {
  auto at = [&](const std::string& n) { return param_at(t, base, n); };
  ConvNextParams p;
  p.stem_w = at(kTrunk + "stem.0.weight"), p.stem_b = at(kTrunk + "stem.0.bias");
  p.stem_ln_w = at(kTrunk + "stem.1.weight"), p.stem_ln_b = at(kTrunk + "stem.1.bias");
  for (int s = 0; s < 4; ++s) {
    ConvNextStageParams& st = p.stages[s];
    if (s > 0) {
      st.ds_ln_w = at(stage_prefix(s) + "downsample.0.weight"), st.ds_ln_b = at(stage_prefix(s) + "downsample.0.bias");
      st.ds_w = at(stage_prefix(s) + "downsample.1.weight"), st.ds_b = at(stage_prefix(s) + "downsample.1.bias");
    }
    for (int b = 0; b < spec.depths[s]; ++b) {
      const std::string pre = block_name(s, b);
      st.blocks.push_back({at(pre + "gamma"), at(pre + "conv_dw.weight"), at(pre + "conv_dw.bias"),
                           at(pre + "norm.weight"), at(pre + "norm.bias"), at(pre + "mlp.fc1.weight"),
                           at(pre + "mlp.fc1.bias"), at(pre + "mlp.fc2.weight"), at(pre + "mlp.fc2.bias")});
    }
  }
  p.head_ln_w = at(kTrunk + "head.norm.weight"), p.head_ln_b = at(kTrunk + "head.norm.bias");
  if (v.head_mlp) {
    p.mlp_fc1_w = at("visual.head.mlp.fc1.weight"), p.mlp_fc1_b = at("visual.head.mlp.fc1.bias");
    p.mlp_fc2_w = at("visual.head.mlp.fc2.weight");
  } else {
    p.proj_w = at("visual.head.proj.weight");
  }
  return p;
}

}  // namespace

void ConvNextTower::add_params(ParamTable& t) const {
  const VisionCfg& v = cfg_.vision;
  const int64_t E = cfg_.embed_dim, C0 = dim(0), C3 = dim(3);
  add_wb(t, kTrunk + "stem.0", {C0, 3, 4, 4}, C0);
  add_wb(t, kTrunk + "stem.1", {C0}, C0);
  for (int s = 0; s < 4; ++s) {
    const int64_t C = dim(size_t(s));
    if (s > 0) {
      const int64_t Cp = dim(size_t(s - 1));
      add_wb(t, stage_prefix(s) + "downsample.0", {Cp}, Cp);
      add_wb(t, stage_prefix(s) + "downsample.1", {C, Cp, 2, 2}, C);
    }
    for (int b = 0; b < depth(size_t(s)); ++b) add_block(t, block_name(s, b), C);
  }
  add_wb(t, kTrunk + "head.norm", {C3}, C3);
  if (v.head_mlp) {
    add_wb(t, "visual.head.mlp.fc1", {2 * E, C3}, 2 * E);
    t.add("visual.head.mlp.fc2.weight", {E, 2 * E});  // Mlp(bias=(True, proj_bias=False))
  } else {
    t.add("visual.head.proj.weight", {E, C3});  // nn.Linear(bias=proj_bias=False)
  }
}

void ConvNextTower::bind(const ParamTable& t, float* params, float* grads) {
  p_ = bind_convnext(cfg_.vision, spec_, t, params);
  g_ = grads ? bind_convnext(cfg_.vision, spec_, t, grads) : ConvNextParams{};
}

// timm's _init_weights: every Conv2d and Linear of the trunk trunc_normal(0.02) with zero bias,
// norms weight 1 and bias 0, gamma ls_init_value 1e-6; TimmModel's head PyTorch's nn.Linear
// default, U(+-1/sqrt(fan_in)) for weights and biases.
bool ConvNextTower::init_param(const ParamInfo& p, const ParamTable&, std::span<float> out, Rng& rng) const {
  const std::string& n = p.name;
  if (n.rfind("visual.head.", 0) == 0) {
    fill_uniform(out, 1.0 / std::sqrt(double(n.find("fc1.bias") != std::string::npos ? dim(3) : p.shape.back())), rng);
    return true;
  }
  if (n.rfind(kTrunk, 0) != 0) return false;
  if (ends_with(n, ".gamma")) {
    fill_value(out, 1e-6f);
  } else if (ends_with(n, ".bias")) {
    fill_value(out, 0.0f);
  } else if (p.shape.size() == 1) {  // stem.1, downsample.0, norm, head.norm
    fill_value(out, 1.0f);
  } else {
    fill_trunc_normal(out, 0.02, -100, 100, rng);
  }
  return true;
}

std::string ConvNextTower::block_prefix(int i) const {
  for (int s = 0; s < 4; i -= depth(size_t(s)), ++s)
    if (i < depth(size_t(s))) return block_name(s, i);
  OC_FAIL("ConvNeXt block {} out of range", i);
}

std::string ConvNextTower::describe() const {
  const VisionCfg& v = cfg_.vision;
  return fmt::format("{}, {} px, blocks {}-{}-{}-{} of widths {}-{}-{}-{}, {} head", v.timm_model_name, v.image_size,
                     depth(0), depth(1), depth(2), depth(3), dim(0), dim(1), dim(2), dim(3),
                     v.head_mlp ? "MLP" : "linear");
}

// The stem's GEMM, each stage's downsample conv and blocks (depthwise 7x7, fc1, fc2), the head.
double ConvNextTower::forward_macs() const {
  const VisionCfg& v = cfg_.vision;
  const double E = cfg_.embed_dim;
  double H = v.image_size / 4.0, macs = H * H * 48 * dim(0);
  for (size_t s = 0; s < 4; ++s) {
    const double C = dim(s);
    if (s > 0) H /= 2, macs += H * H * 4 * dim(s - 1) * C;
    macs += depth(s) * H * H * (kDwK * kDwK * C + 8 * C * C);
  }
  const double C3 = dim(3);
  return macs + (v.head_mlp ? 2 * E * C3 + 2 * E * E : E * C3);
}

}  // namespace oc
