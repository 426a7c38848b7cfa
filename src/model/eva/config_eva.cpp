#include "model/eva/config_eva.h"

#include <array>

#include "core/check.h"
#include "model/config_limits.h"
#include "model/eva/eva_tower.h"

namespace oc {
namespace {
using nlohmann::json;

// timm 0.9.16 models/eva.py: the EVA-CLIP variants with rotary embeddings, SwiGLU MLPs with a
// sub-LayerNorm (scale_mlp), a LayerNorm on the attention output (scale_attn_inner), separate
// q/k/v projections (qkv_fused=False, k without bias) and ref_feat_shape (16, 16).
constexpr double kSwigluRatio = 4 * 2 / 3.0;
constexpr std::array<EvaSpec, 3> kEva02 = {{
    {"eva02_base_patch16_clip_224", 224, 16, 768, 12, 12, kSwigluRatio, 16},
    {"eva02_large_patch14_clip_224", 224, 14, 1024, 24, 16, kSwigluRatio, 16},
    {"eva02_large_patch14_clip_336", 336, 14, 1024, 24, 16, kSwigluRatio, 16},
}};

std::string built_names() {
  std::string s;
  for (const EvaSpec& v : kEva02) s += (s.empty() ? "" : ", ") + std::string(v.name);
  return s;
}

// OpenCLIP does not read the ViT keys for a timm tower; one that disagrees with the timm
// model would be silently ignored there, so it is refused here.
template <class T>
void same_or_absent(const json& v, const char* key, T timm_value, const std::string& where, const EvaSpec& s) {
  if (!v.contains(key) || v[key].is_null() || v[key] == json(timm_value)) return;
  OC_USER_ERROR(
      "{}: \"{}\" is {}, but the timm model {} has {} (OpenCLIP ignores vision_cfg's \"{}\" for timm "
      "towers); remove the key",
      where, key, v[key].dump(), s.name, json(timm_value).dump(), key);
}

void check_head(const json& v, const std::string& where) {
  const json pool = v.contains("timm_pool") && !v["timm_pool"].is_null() ? v["timm_pool"] : json("avg");
  const json proj = v.contains("timm_proj") ? v["timm_proj"] : json("linear");
  if (pool != json("token") || !proj.is_null())
    OC_USER_ERROR(
        "{}: \"timm_pool\" {} with \"timm_proj\" {} is not supported with an EVA02 tower: openclip-cpp builds "
        "it as OpenCLIP's EVA02 configs do (\"timm_pool\": \"token\", \"timm_proj\": null: timm's head)",
        where, pool.dump(), proj.dump());
  for (const char* k : {"ls_init_value", "no_ln_pre", "pool_type", "final_ln_after_pool"})
    if (v.contains(k) && !v[k].is_null())
      OC_USER_ERROR("{}: \"{}\" is an option of OpenCLIP's own ViT, not of the EVA02 tower; remove the key", where, k);
  if (v.contains("patch_dropout") && v["patch_dropout"].is_number() && v["patch_dropout"].get<double>() > 0)
    OC_USER_ERROR(
        "{}: \"patch_dropout\" {} is not supported with an EVA02 tower: timm's PatchDropout (which also gathers "
        "the rotary embedding per kept patch) is not built; remove the key",
        where, v["patch_dropout"].dump());
}
}  // namespace

const EvaSpec* find_eva(std::string_view name) {
  for (const EvaSpec& v : kEva02)
    if (v.name == name) return &v;
  return nullptr;
}

bool is_eva_vision_cfg(const json& v) {
  const json& n = v["timm_model_name"];
  return n.is_string() && n.get<std::string>().rfind("eva", 0) == 0;
}

bool is_eva(const VisionCfg& v) { return find_eva(v.timm_model_name) != nullptr; }

void read_eva_vision(const json& v, VisionCfg* c, const std::string& where) {
  const std::string name = v["timm_model_name"].get<std::string>();
  const EvaSpec* s = find_eva(name);
  if (!s)
    OC_USER_ERROR(
        "{}: \"timm_model_name\" \"{}\" is not supported: of timm's EVA towers openclip-cpp builds the EVA02 "
        "ones with rotary embeddings and SwiGLU ({}); EVA02-E (post-norm blocks, GELU MLP) and EVA01 are not built",
        where, name, built_names());
  check_head(v, where);
  same_or_absent(v, "image_size", s->image_size, where, *s);
  same_or_absent(v, "patch_size", s->patch_size, where, *s);
  same_or_absent(v, "width", s->width, where, *s);
  same_or_absent(v, "layers", s->layers, where, *s);
  same_or_absent(v, "head_width", s->width / s->heads, where, *s);
  c->timm_model_name = name;
  c->image_size = s->image_size, c->patch_size = s->patch_size, c->width = s->width, c->layers = s->layers;
  c->head_width = s->width / s->heads, c->mlp_ratio = s->mlp_ratio;
  c->ln_eps = 1e-6;  // timm's Eva: partial(nn.LayerNorm, eps=1e-6)
}

json eva_vision_json(const VisionCfg& c) {
  return {{"image_size", c.image_size},
          {"timm_model_name", c.timm_model_name},
          {"timm_model_pretrained", false},
          {"timm_pool", "token"},
          {"timm_proj", nullptr}};
}

void EvaTower::write_vision_cfg(nlohmann::json* v) const { *v = eva_vision_json(cfg_.vision); }

// The rotary embedding rotates pairs of each head's columns over two axes: 4 | head width.
void EvaTower::check_config(const std::string& where) const {
  check_head_width(cfg_.vision, where);
  if (cfg_.vision.head_width % 4 != 0)
    OC_USER_ERROR("{}: the EVA02 tower's head width {} is not a multiple of 4 (its 2D rotary embedding)", where,
                  cfg_.vision.head_width);
}

}  // namespace oc
