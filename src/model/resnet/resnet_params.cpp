#include "model/resnet/resnet_params.h"

#include <fmt/ranges.h>

#include <cmath>

#include "core/check.h"
#include "core/rng.h"
#include "model/params.h"
#include "model/resnet/modified_resnet.h"

namespace oc {
namespace {

// One Bottleneck of layer1..layer4: its state_dict prefix and channel counts.
struct BlockSpec {
  std::string prefix;
  int64_t inplanes, planes, stride;
};

// ModifiedResNet._make_layer: planes = width * 2^L, stride 2 from layer2 on (first block only).
std::vector<BlockSpec> block_specs(const VisionCfg& v) {
  std::vector<BlockSpec> s;
  int64_t inplanes = v.width;
  for (size_t L = 0; L < v.resnet_layers.size(); ++L) {
    const int64_t planes = int64_t(v.width) << L;
    for (int i = 0; i < v.resnet_layers[L]; ++i) {
      s.push_back({fmt::format("visual.layer{}.{}.", L + 1, i), inplanes, planes, i == 0 && L > 0 ? 2 : 1});
      inplanes = planes * 4;
    }
  }
  return s;
}

bool has_down(const BlockSpec& b) { return b.stride > 1 || b.inplanes != b.planes * 4; }

void add_bn(ParamTable& t, const std::string& pre, int64_t c) {
  t.add(pre + "weight", {c});
  t.add(pre + "bias", {c});
  t.add(pre + "running_mean", {c}, /*buffer=*/true);
  t.add(pre + "running_var", {c}, true);
  t.add(pre + "num_batches_tracked", {}, true);
}

void add_conv_bn(ParamTable& t, const std::string& conv, const std::string& bn, int64_t cin, int64_t cout, int64_t k) {
  t.add(conv + "weight", {cout, cin, k, k});
  add_bn(t, bn, cout);
}

float* at(const ParamTable& t, float* base, const std::string& name) {
  const ParamInfo* p = t.find(name);
  OC_CHECK(p, "parameter {} missing from the table", name);
  return base + p->offset;
}

ConvBnParams bind_conv_bn(const ParamTable& t, float* base, const std::string& conv, const std::string& bn, int64_t cin,
                          int64_t cout, int64_t k) {
  return {at(t, base, conv + "weight"),
          at(t, base, bn + "weight"),
          at(t, base, bn + "bias"),
          at(t, base, bn + "running_mean"),
          at(t, base, bn + "running_var"),
          at(t, base, bn + "num_batches_tracked"),
          cin,
          cout,
          k};
}

bool ends(const std::string& n, std::string_view s) {
  return n.size() >= s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0;
}

}  // namespace

void add_resnet_params(ParamTable& t, const ModelCfg& c) {
  const VisionCfg& v = c.vision;
  const int64_t w = v.width, C = w * 32, HW = int64_t(v.image_size / 32) * (v.image_size / 32);
  add_conv_bn(t, "visual.conv1.", "visual.bn1.", 3, w / 2, 3);
  add_conv_bn(t, "visual.conv2.", "visual.bn2.", w / 2, w / 2, 3);
  add_conv_bn(t, "visual.conv3.", "visual.bn3.", w / 2, w, 3);
  for (const BlockSpec& b : block_specs(v)) {
    add_conv_bn(t, b.prefix + "conv1.", b.prefix + "bn1.", b.inplanes, b.planes, 1);
    add_conv_bn(t, b.prefix + "conv2.", b.prefix + "bn2.", b.planes, b.planes, 3);
    add_conv_bn(t, b.prefix + "conv3.", b.prefix + "bn3.", b.planes, b.planes * 4, 1);
    if (has_down(b))
      add_conv_bn(t, b.prefix + "downsample.0.", b.prefix + "downsample.1.", b.inplanes, b.planes * 4, 1);
  }
  t.add("visual.attnpool.positional_embedding", {HW + 1, C});
  for (const char* proj : {"k_proj", "q_proj", "v_proj"}) {
    t.add(fmt::format("visual.attnpool.{}.weight", proj), {C, C});
    t.add(fmt::format("visual.attnpool.{}.bias", proj), {C});
  }
  t.add("visual.attnpool.c_proj.weight", {c.embed_dim, C});
  t.add("visual.attnpool.c_proj.bias", {c.embed_dim});
}

ResNetParams bind_resnet_params(const ModelCfg& c, const ParamTable& t, float* base) {
  const VisionCfg& v = c.vision;
  const int64_t w = v.width;
  ResNetParams p;
  p.stem[0] = bind_conv_bn(t, base, "visual.conv1.", "visual.bn1.", 3, w / 2, 3);
  p.stem[1] = bind_conv_bn(t, base, "visual.conv2.", "visual.bn2.", w / 2, w / 2, 3);
  p.stem[2] = bind_conv_bn(t, base, "visual.conv3.", "visual.bn3.", w / 2, w, 3);
  for (const BlockSpec& b : block_specs(v)) {
    BottleneckParams bp;
    bp.c1 = bind_conv_bn(t, base, b.prefix + "conv1.", b.prefix + "bn1.", b.inplanes, b.planes, 1);
    bp.c2 = bind_conv_bn(t, base, b.prefix + "conv2.", b.prefix + "bn2.", b.planes, b.planes, 3);
    bp.c3 = bind_conv_bn(t, base, b.prefix + "conv3.", b.prefix + "bn3.", b.planes, b.planes * 4, 1);
    bp.has_down = has_down(b);
    if (bp.has_down)
      bp.down =
          bind_conv_bn(t, base, b.prefix + "downsample.0.", b.prefix + "downsample.1.", b.inplanes, b.planes * 4, 1);
    bp.stride = b.stride;
    p.blocks.push_back(bp);
  }
  const std::string a = "visual.attnpool.";
  p.pool = {at(t, base, a + "positional_embedding"), at(t, base, a + "k_proj.weight"), at(t, base, a + "k_proj.bias"),
            at(t, base, a + "q_proj.weight"),        at(t, base, a + "q_proj.bias"),   at(t, base, a + "v_proj.weight"),
            at(t, base, a + "v_proj.bias"),          at(t, base, a + "c_proj.weight"), at(t, base, a + "c_proj.bias")};
  return p;
}

bool init_resnet_param(const ModelCfg& c, const ParamInfo& p, float* d, Rng& rng) {
  const double C = 32.0 * c.vision.width;  // the attention pool's width
  const std::string& n = p.name;
  auto fill = [&](float v) { std::fill(d, d + p.numel, v); };
  auto normal = [&](double std) {
    for (size_t i = 0; i < p.numel; ++i) d[i] = float(rng.normal() * std);
  };
  auto uniform = [&](double bound) {
    for (size_t i = 0; i < p.numel; ++i) d[i] = float((2 * rng.uniform() - 1) * bound);
  };
  const bool bn = n.find(".bn") != std::string::npos || n.find(".downsample.1.") != std::string::npos;
  const bool pool = n.rfind("visual.attnpool.", 0) == 0;
  if (bn && ends(n, ".weight")) {
    // ModifiedResNet.init_parameters zeroes bn3.weight of every Bottleneck (not the stem's bn3).
    fill(n.rfind("visual.layer", 0) == 0 && ends(n, "bn3.weight") ? 0.0f : 1.0f);
  } else if (bn && (ends(n, ".bias") || ends(n, ".running_mean") || ends(n, ".num_batches_tracked"))) {
    fill(0.0f);
  } else if (bn && ends(n, ".running_var")) {
    fill(1.0f);
  } else if (!pool && ends(n, ".weight") && p.shape.size() == 4) {
    uniform(1.0 / std::sqrt(double(p.shape[1] * p.shape[2] * p.shape[3])));  // kaiming_uniform(a=sqrt 5)
  } else if (pool && ends(n, "positional_embedding")) {
    normal(std::pow(C, -0.5));
  } else if (pool && ends(n, "_proj.weight")) {
    normal(std::pow(C, -0.5));  // std = c_proj.in_features^-0.5 for all four
  } else if (pool && ends(n, "_proj.bias")) {
    uniform(1.0 / std::sqrt(C));  // nn.Linear's default, fan_in = C
  } else {
    return false;
  }
  return true;
}

double resnet_forward_macs(const ModelCfg& c) {
  const VisionCfg& v = c.vision;
  const double S = v.image_size, w = v.width;
  auto conv = [](double hw, double cin, double cout, double k) { return hw * cin * cout * k * k; };
  double s = S / 2, macs = conv(s * s, 3, w / 2, 3) + conv(s * s, w / 2, w / 2, 3) + conv(s * s, w / 2, w, 3);
  s /= 2;  // the stem's AvgPool2d(2)
  for (const BlockSpec& b : block_specs(v)) {
    macs += conv(s * s, double(b.inplanes), double(b.planes), 1) + conv(s * s, double(b.planes), double(b.planes), 3);
    const double o = s / double(b.stride);
    macs += conv(o * o, double(b.planes), double(b.planes * 4), 1);
    if (has_down(b)) macs += conv(o * o, double(b.inplanes), double(b.planes * 4), 1);
    s = o;
  }
  const double C = w * 32, T = s * s + 1;
  // q of the mean token, k/v of every token, its attention over them, c_proj
  return macs + (1 + 2 * T) * C * C + 2 * T * C + C * c.embed_dim;
}

// ---- the tower's parameter interface (modified_resnet.h) ------------------------------
bool ResNetTower::init_param(const ParamInfo& p, const ParamTable&, std::span<float> out, Rng& rng) const {
  if (p.name.rfind("visual.", 0) != 0) return false;
  OC_CHECK(init_resnet_param(cfg_, p, out.data(), rng), "no initialisation rule for parameter {}", p.name);
  return true;
}

void ResNetTower::bind(const ParamTable& t, float* params, float* grads) {
  p_ = bind_resnet_params(cfg_, t, params);
  g_ = grads ? bind_resnet_params(cfg_, t, grads) : ResNetParams{};
}

std::string ResNetTower::describe() const {
  const auto& v = cfg_.vision;
  return fmt::format("{} px, stages [{}], width {}", v.image_size, fmt::join(v.resnet_layers, ", "), v.width);
}

std::string ResNetTower::block_prefix(int i) const {
  OC_FAIL("the ResNet tower of {} has no transformer block {}", cfg_.name, i);
}

void ResNetTower::check_unlocked_groups(int unlocked) const {
  if (unlocked != 0)
    OC_USER_ERROR("--lock-image-unlocked-groups {}: a ResNet image tower ({}) can only be locked whole (OpenCLIP's "
                  "ModifiedResNet.lock asserts unlocked_groups == 0)",
                  unlocked, cfg_.name);
}

}  // namespace oc
