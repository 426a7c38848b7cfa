#include "model/config_limits.h"

#include <cmath>

#include "core/check.h"
#include "model/image_tower.h"

namespace oc {
namespace {
using L = ModelLimits;

void in_range(int64_t v, int64_t lo, int64_t hi, const char* key, const std::string& where) {
  if (v < lo || v > hi) OC_USER_ERROR("{}: \"{}\" must be in [{}, {}], got {}", where, key, lo, hi, v);
}

void finite(const std::optional<double>& v, const char* key, const std::string& where) {
  if (v && !std::isfinite(*v)) OC_USER_ERROR("{}: \"{}\" must be a finite number, got {}", where, key, *v);
}

// mlp_ratio: OpenCLIP takes int(width * mlp_ratio) as the MLP width, which must be >= 1.
void mlp_ratio(double r, int width, const std::string& where) {
  if (!(r > 0 && r <= L::kMaxMlpRatio))
    OC_USER_ERROR("{}: \"mlp_ratio\" must be in (0, {}], got {}", where, L::kMaxMlpRatio, r);
  if (int64_t(double(width) * r) < 1)
    OC_USER_ERROR("{}: \"mlp_ratio\" {} times width {} gives an MLP width under 1", where, r, width);
}

void vision(const VisionCfg& v, const std::string& w) {
  in_range(v.image_size, 1, L::kMaxImageSize, "image_size", w);
  in_range(v.patch_size, 1, v.image_size, "patch_size", w);
  if (v.grid() > L::kMaxGrid)
    OC_USER_ERROR("{}: image_size / patch_size = {} is over {} (at most {} tokens)", w, v.grid(), L::kMaxGrid,
                  L::kMaxGrid * L::kMaxGrid + 1);
  in_range(v.layers, 1, L::kMaxLayers, "layers", w);
  in_range(v.width, 1, L::kMaxWidth, "width", w);
  mlp_ratio(v.mlp_ratio, v.width, w);
  finite(v.ls_init_value, "ls_init_value", w);
}

void text(const TextCfg& t, const std::string& w) {
  in_range(t.context_length, 1, L::kMaxContext, "context_length", w);
  in_range(t.vocab_size, 1, L::kMaxVocab, "vocab_size", w);
  in_range(t.layers, 1, L::kMaxLayers, "layers", w);
  in_range(t.width, 1, L::kMaxWidth, "width", w);
  in_range(t.heads, 1, t.width, "heads", w);
  if (t.width % t.heads) OC_USER_ERROR("{}: width {} is not a multiple of heads {}", w, t.width, t.heads);
  mlp_ratio(t.mlp_ratio, t.width, w);
  in_range(t.pad_id, 0, t.vocab_size - 1, "pad_id", w);
  finite(t.ls_init_value, "ls_init_value", w);
}
}  // namespace

void check_head_width(const VisionCfg& v, const std::string& w) {
  in_range(v.head_width, 1, v.width, "head_width", w);
  if (v.width % v.head_width)
    OC_USER_ERROR("{}: width {} is not a multiple of head_width {}", w, v.width, v.head_width);
}

void validate_model_numbers(const ModelCfg& c, const std::string& where, const std::string& vision_where,
                            const std::string& text_where) {
  in_range(c.embed_dim, 1, L::kMaxWidth, "embed_dim", where);
  finite(c.init_logit_scale, "init_logit_scale", where);
  finite(c.init_logit_bias, "init_logit_bias", where);
  vision(c.vision, vision_where);
  make_image_tower(c)->check_config(vision_where);  // the family's own: patch grid, heads
  text(c.text, text_where);
}

}  // namespace oc
