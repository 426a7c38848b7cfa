#include "model/precision.h"

#include "core/bf16.h"
#include "core/check.h"

namespace oc {

Precision parse_precision(const std::string& name) {
  for (const auto& [spelling, p] : kPrecisionNames)
    if (name == spelling) return p;
  if (name == "fp16" || name == "pure_fp16")
    OC_USER_ERROR("--precision {}: fp16 weights are not supported on the CPU backend; use amp_bf16 or fp32", name);
  OC_USER_ERROR("--precision {}: unknown; choose one of amp, amp_bf16, amp_bfloat16, bf16, pure_bf16, fp32, int8",
                name);
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::AmpBf16: return "amp_bf16";
    case Precision::Bf16: return "bf16";
    case Precision::PureBf16: return "pure_bf16";
    case Precision::Int8:
      return "int8";
  }
  return "?";
}

bool is_lp_param(std::string_view name) {
  auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.substr(name.size() - s.size()) == s; };
  // nn.Linear / nn.Conv2d weights and biases (c_fc, c_proj, out_proj, conv1), the
  // MultiheadAttention in_proj weight and bias, and the two nn.Parameter projections.
  // text_projection.weight/.bias: the projection as nn.Linear (text_cfg.proj_bias).
  // ModifiedResNet: every Conv2d (the stem's conv1-3, each Bottleneck's conv1-3 and
  // downsample.0) and the attention pool's q/k/v/c_proj Linears; not its BatchNorms or
  // attnpool.positional_embedding.
  const bool conv = name.size() >= 12 && ends(".weight") && name.substr(name.size() - 12, 4) == "conv" &&
                    name[name.size() - 8] >= '1' && name[name.size() - 8] <= '3';  // [.]convN.weight
  const bool attnpool = name.rfind("visual.attnpool.", 0) == 0 && name.find("_proj.") != std::string_view::npos;
  return name == "text_projection" || name.rfind("text_projection.", 0) == 0 || name == "visual.proj" || conv ||
         ends(".downsample.0.weight") || attnpool || name.find(".attn.") != std::string_view::npos ||
         name.find(".mlp.") != std::string_view::npos;
}

bool is_lp_param_timm(std::string_view name) {
  const bool text_ln = name.find(".ln_1.") != std::string_view::npos || name.find(".ln_2.") != std::string_view::npos ||
                       name.find("ln_final.") != std::string_view::npos;
  return !text_ln;
}

void round_lp_params(ops::Backend& be, const ParamTable& table, float* params, Precision p) {
  if (p == Precision::PureBf16) return be.run(ops::RoundToBf16Args{.x = params, .n = int64_t(table.total)});
  if (p != Precision::Bf16) return;
  const bool timm = table.find("visual.trunk.pos_embed") != nullptr;  // a timm image tower
  for (const ParamInfo& info : table.params)
    if (timm ? is_lp_param_timm(info.name) : is_lp_param(info.name))
      be.run(ops::RoundToBf16Args{.x = params + info.offset, .n = int64_t(info.numel)});
}

}  // namespace oc
