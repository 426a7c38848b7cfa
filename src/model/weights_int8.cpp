#include "model/weights_int8.h"

#include "core/check.h"
#include "core/profile.h"

namespace oc {

namespace {
// The parameter at `w` as an [N, K] matrix: N its first dimension, K the product of the others
// (a Linear's [out, in], conv1's [W, 3, P, P]), quantized on `be`.
// With `scales`, the weight's static input scale (model/int8_scales.h) goes with it.
std::unique_ptr<ops::Int8Weight> quantize_param(const ParamTable& table, const float* base, const float* w,
                                                ops::Backend& be, const Int8Scales* scales) {
  const ParamInfo* info = nullptr;
  for (const ParamInfo& pi : table.params)
    if (base + pi.offset == w) info = &pi;
  OC_CHECK(info && info->shape.size() >= 2, "int8 weights: no matrix parameter at offset {}", w - base);
  int64_t K = 1;
  for (size_t i = 1; i < info->shape.size(); ++i) K *= int64_t(info->shape[i]);
  float input_scale = 0.0f;
  if (scales) {
    const std::string name = int8_scale_name(info->name);
    auto it = scales->scale.find(name);
    if (it == scales->scale.end()) OC_USER_ERROR("int8 scales {}: no tensor {}", scales->file, name);
    input_scale = it->second;
  }
  return ops::quantize_weight_int8(
      be, {.W = w, .N = int64_t(info->shape[0]), .K = K, .name = info->name, .input_scale = input_scale});
}

void quantize_blocks(const ParamTable& table, const std::vector<BlockParams>& blocks, const float* base,
                     ops::Backend& be, const Int8Scales* scales, std::vector<std::unique_ptr<ops::Int8Weight>>& own,
                     std::vector<BlockWeightsInt8>& out) {
  own.clear(), out.clear();
  auto one = [&](const float* w) {
    own.push_back(quantize_param(table, base, w, be, scales));
    return own.back().get();
  };
  for (const BlockParams& b : blocks) {
    BlockWeightsInt8 q{};
    q.in_w = one(b.in_w), q.out_w = one(b.out_w), q.fc_w = one(b.fc_w), q.proj_w = one(b.proj_w);
    out.push_back(q);
  }
}
}  // namespace

void Int8Weights::build(const ParamTable& table, const Int8Sources& w, const float* base, ops::Backend& be, bool vision,
                        bool text, const Int8Scales* scales) {
  OC_PROFILE("int8_weights");
  if (vision) {
    quantize_blocks(table, *w.vision, base, be, scales, own_v_, v_);
    patch_ = w.vision_patch ? quantize_param(table, base, w.vision_patch, be, scales) : nullptr;
  }
  if (text) quantize_blocks(table, *w.text, base, be, scales, own_t_, t_);
}

void Int8Weights::clear() { own_v_.clear(), own_t_.clear(), v_.clear(), t_.clear(), patch_.reset(); }

double Int8Weights::mib() const {
  double n = patch_ ? double(patch_->N * patch_->K) : 0.0;
  for (const auto* own : {&own_v_, &own_t_})
    for (const auto& w : *own) n += double(w->N * w->K);  // s8 bytes (the plain copy doubles it on cpu)
  return n / (1 << 20);
}

std::vector<std::string> int8_weight_names(const ParamTable& table, const Int8Sources& w, const float* base) {
  std::vector<std::string> names;
  auto add = [&](const float* p) {
    for (const ParamInfo& pi : table.params)
      if (base + pi.offset == p) names.push_back(pi.name);
  };
  for (const auto* blocks : {w.vision, w.text})
    if (blocks)
      for (const BlockParams& b : *blocks)
        for (const float* p : {b.in_w, b.out_w, b.fc_w, b.proj_w}) add(p);
  if (w.vision_patch) add(w.vision_patch);
  return names;
}

}  // namespace oc
