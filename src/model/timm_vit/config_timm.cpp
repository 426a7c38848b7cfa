#include "model/timm_vit/config_timm.h"

#include <array>

#include "core/check.h"
#include "model/config_limits.h"
#include "model/timm_vit/timm_vit_tower.h"

namespace oc {
namespace {
using nlohmann::json;

// timm 1.0.22 models/vision_transformer.py, the vit_*_siglip_* entries with global_pool 'map'
// (img_size from the name; the first 8 are timm 0.9.16's too). The last column is
// act_layer='gelu_tanh' (the towers added for SigLIP2's configs; the rest use nn.GELU).
constexpr std::array<TimmVitSpec, 16> kSiglipVits = {{
    {"vit_base_patch16_siglip_224", 224, 16, 768, 12, 12, 4.0, false},
    {"vit_base_patch16_siglip_256", 256, 16, 768, 12, 12, 4.0, false},
    {"vit_base_patch16_siglip_384", 384, 16, 768, 12, 12, 4.0, false},
    {"vit_base_patch16_siglip_512", 512, 16, 768, 12, 12, 4.0, false},
    {"vit_large_patch16_siglip_256", 256, 16, 1024, 24, 16, 4.0, false},
    {"vit_large_patch16_siglip_384", 384, 16, 1024, 24, 16, 4.0, false},
    {"vit_so400m_patch14_siglip_224", 224, 14, 1152, 27, 16, 3.7362, false},
    {"vit_so400m_patch14_siglip_384", 384, 14, 1152, 27, 16, 3.7362, false},
    {"vit_base_patch32_siglip_256", 256, 32, 768, 12, 12, 4.0, true},
    {"vit_large_patch16_siglip_512", 512, 16, 1024, 24, 16, 4.0, true},
    {"vit_so400m_patch14_siglip_378", 378, 14, 1152, 27, 16, 3.7362, false},
    {"vit_so400m_patch16_siglip_256", 256, 16, 1152, 27, 16, 3.7362, true},
    {"vit_so400m_patch16_siglip_384", 384, 16, 1152, 27, 16, 3.7362, true},
    {"vit_so400m_patch16_siglip_512", 512, 16, 1152, 27, 16, 3.7362, true},
    {"vit_giantopt_patch16_siglip_256", 256, 16, 1536, 40, 16, 4.0, true},
    {"vit_giantopt_patch16_siglip_384", 384, 16, 1536, 40, 16, 4.0, true},
}};

std::string built_names() {
  std::string s;
  for (const TimmVitSpec& v : kSiglipVits) s += (s.empty() ? "" : ", ") + std::string(v.name);
  return s;
}

// A string key that must be `want` (absent means OpenCLIP's default `dflt`).
void require_string(const json& v, const char* key, const char* dflt, const char* want, const std::string& where) {
  const json value = v.contains(key) && !v[key].is_null() ? v[key] : json(dflt);
  if (value != json(want))
    OC_USER_ERROR(
        "{}: \"{}\" {} is not supported with a timm tower: openclip-cpp builds timm's ViTs with "
        "\"timm_pool\": \"map\" and \"timm_proj\": \"none\" (the SigLIP configs)",
        where, key, value.dump());
}

// OpenCLIP does not read the ViT keys for a timm tower; one that disagrees with the timm
// model would be silently ignored there, so it is refused here.
template <class T>
void same_or_absent(const json& v, const char* key, T timm_value, const std::string& where, const std::string& model) {
  if (!v.contains(key) || v[key].is_null() || v[key] == json(timm_value)) return;
  OC_USER_ERROR(
      "{}: \"{}\" is {}, but the timm model {} has {} (OpenCLIP ignores vision_cfg's \"{}\" for timm "
      "towers); remove the key",
      where, key, v[key].dump(), model, json(timm_value).dump(), key);
}
}  // namespace

const TimmVitSpec* find_timm_vit(std::string_view name) {
  for (const TimmVitSpec& v : kSiglipVits)
    if (v.name == name) return &v;
  return nullptr;
}

void read_timm_vision(const json& v, int embed_dim, VisionCfg* c, const std::string& where) {
  const json& n = v["timm_model_name"];
  const TimmVitSpec* s = n.is_string() ? find_timm_vit(n.get<std::string>()) : nullptr;
  if (!s)
    OC_USER_ERROR(
        "{}: \"timm_model_name\" {} is not supported: timm image towers are not built, except the SigLIP "
        "ViTs ({}) and the ConvNeXts (convnext_tiny, _small, _base, _large, _xlarge, _xxlarge)",
        where, n.dump(), built_names());
  require_string(v, "timm_pool", "avg", "map", where);
  require_string(v, "timm_proj", "linear", "none", where);
  const std::string model(s->name);
  same_or_absent(v, "image_size", s->image_size, where, model);
  same_or_absent(v, "patch_size", s->patch_size, where, model);
  same_or_absent(v, "width", s->width, where, model);
  same_or_absent(v, "layers", s->layers, where, model);
  same_or_absent(v, "head_width", s->width / s->heads, where, model);
  same_or_absent(v, "mlp_ratio", s->mlp_ratio, where, model);
  for (const char* k : {"ls_init_value", "patch_dropout", "no_ln_pre", "pool_type", "final_ln_after_pool"})
    if (v.contains(k) && !v[k].is_null())
      OC_USER_ERROR("{}: \"{}\" is an option of OpenCLIP's own ViT, not of the timm tower {}; remove the key", where, k,
                    model);
  if (v.contains("timm_drop_path") && !v["timm_drop_path"].is_null() && v["timm_drop_path"] != json(0.0))
    OC_USER_ERROR("{}: \"timm_drop_path\" {}: stochastic depth of the timm ViT {} is not built; remove the key", where,
                  v["timm_drop_path"].dump(), model);
  if (embed_dim != s->width)
    OC_USER_ERROR("{}: \"timm_proj\": \"none\" passes the pooled {}-wide features through, but embed_dim is {}", where,
                  s->width, embed_dim);
  c->timm_model_name = model;
  c->class_token = false;  // timm's SigLIP ViTs: class_token=False, MAP pooling
  c->image_size = s->image_size, c->patch_size = s->patch_size, c->width = s->width, c->layers = s->layers;
  c->head_width = s->width / s->heads, c->mlp_ratio = s->mlp_ratio;
  c->ln_eps = 1e-6;  // timm's VisionTransformer: partial(nn.LayerNorm, eps=1e-6)
}

void refuse_timm_head_keys(const json& v, const std::string& where) {
  if (v.contains("timm_drop_path") && !v["timm_drop_path"].is_null())
    OC_USER_ERROR("{}: \"timm_drop_path\" without \"timm_model_name\" has no tower to apply to; remove the key", where);
  for (auto [key, dflt] : {std::pair{"timm_pool", "avg"}, std::pair{"timm_proj", "linear"}})
    if (v.contains(key) && !v[key].is_null() && v[key] != json(dflt))
      OC_USER_ERROR("{}: \"{}\" {} without \"timm_model_name\" has no tower to apply to; remove the key", where, key,
                    v[key].dump());
}

void TimmVitTower::write_vision_cfg(nlohmann::json* v) const { *v = timm_vision_json(cfg_.vision); }

void TimmVitTower::check_config(const std::string& where) const { check_head_width(cfg_.vision, where); }

json timm_vision_json(const VisionCfg& c) {
  return {{"image_size", c.image_size},
          {"timm_model_name", c.timm_model_name},
          {"timm_model_pretrained", false},
          {"timm_pool", "map"},
          {"timm_proj", "none"}};
}

}  // namespace oc
