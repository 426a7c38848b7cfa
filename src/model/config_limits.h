// The range of every number in a model config. parse_model_config checks each one with its
// key named ("model config x.json text_cfg: \"mlp_ratio\" must be in (0, 64], got -4"), so
// that every size derived from a config (parameter table, activation plans, GEMM shapes)
// is positive and far from overflowing; the sizes themselves are still computed with
// core/checked.h. The bounds are wide: OpenCLIP's largest configs (ViT-bigG-14: width 1664,
// 48 layers, mlp_ratio 4.9231; 336/378-pixel towers; 250002-token vocabularies) are far inside.
#pragma once
#include <string>

#include "core/limits.h"
#include "model/config.h"

namespace oc {

struct ModelLimits {
  static constexpr int kMaxWidth = 65536;          // widths, embed_dim, head_width
  static constexpr int kMaxLayers = 1024;
  static constexpr int kMaxImageSize = 16384;
  static constexpr int kMaxGrid = 256;             // image_size / patch_size: at most 65537 tokens
  static constexpr int kMaxContext = 65536;        // context_length
  static constexpr int kMaxVocab = 1 << 24;        // vocab_size
  static constexpr double kMaxMlpRatio = 64;       // mlp_ratio in (0, 64], width * mlp_ratio >= 1
};

// The fp32 parameter arena a config may ask for (ViT-bigG-14 needs 10 GiB); make_param_table
// checks it, so that a config inside every bound above still cannot ask for terabytes.
inline constexpr Cap kModelParamCap{"the 64 GiB cap on a model's fp32 parameters", uint64_t(64) << 30};

// head_width in [1, width] and a divisor of it (the ViT towers' heads).
void check_head_width(const VisionCfg& v, const std::string& where);

// Throws oc::Error naming the section (`where`, `vision_where`, `text_where`) and the key.
void validate_model_numbers(const ModelCfg& c, const std::string& where, const std::string& vision_where,
                            const std::string& text_where);

}  // namespace oc
