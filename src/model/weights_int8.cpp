#include "model/weights_int8.h"

#include "core/check.h"
#include "core/profile.h"

namespace oc {

namespace {
// The parameter at `w` as an [N, K] matrix: N its first dimension, K the product of the others
// (a Linear's [out, in], conv1's [W, 3, P, P]), quantized on `be`.
std::unique_ptr<ops::Int8Weight> quantize_param(const ParamTable& table, const float* base, const float* w,
                                                ops::Backend& be) {
  const ParamInfo* info = nullptr;
  for (const ParamInfo& pi : table.params)
    if (base + pi.offset == w) info = &pi;
  OC_CHECK(info && info->shape.size() >= 2, "int8 weights: no matrix parameter at offset {}", w - base);
  int64_t K = 1;
  for (size_t i = 1; i < info->shape.size(); ++i) K *= int64_t(info->shape[i]);
  return ops::quantize_weight_int8(be, {.W = w, .N = int64_t(info->shape[0]), .K = K, .name = info->name});
}

void quantize_blocks(const ParamTable& table, const std::vector<BlockParams>& blocks, const float* base,
                     ops::Backend& be, std::vector<std::unique_ptr<ops::Int8Weight>>& own,
                     std::vector<BlockWeightsInt8>& out) {
  own.clear(), out.clear();
  auto one = [&](const float* w) {
    own.push_back(quantize_param(table, base, w, be));
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
                        bool text) {
  OC_PROFILE("int8_weights");
  if (vision) {
    quantize_blocks(table, *w.vision, base, be, own_v_, v_);
    patch_ = w.vision_patch ? quantize_param(table, base, w.vision_patch, be) : nullptr;
  }
  if (text) quantize_blocks(table, *w.text, base, be, own_t_, t_);
}

void Int8Weights::clear() { own_v_.clear(), own_t_.clear(), v_.clear(), t_.clear(), patch_.reset(); }

double Int8Weights::mib() const {
  double n = patch_ ? double(patch_->N * patch_->K) : 0.0;
  for (const auto* own : {&own_v_, &own_t_})
    for (const auto& w : *own) n += double(w->N * w->K);  // s8 bytes (the plain copy doubles it on cpu)
  return n / (1 << 20);
}

}  // namespace oc
