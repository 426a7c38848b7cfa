#include "model/convnext/config_convnext.h"

#include <array>

#include "core/check.h"
#include "model/config_limits.h"
#include "model/convnext/convnext_tower.h"

namespace oc {
namespace {
using nlohmann::json;

// timm 0.9.16 models/convnext.py: convnext_tiny ... convnext_xxlarge (the ones OpenCLIP's
// configs name; OpenCLIP's convnext_*_320 / _d configs reuse them at other sizes and heads).
constexpr std::array<ConvNextSpec, 6> kConvNexts = {{
    {"convnext_tiny", {3, 3, 9, 3}, {96, 192, 384, 768}, 1e-6},
    {"convnext_small", {3, 3, 27, 3}, {96, 192, 384, 768}, 1e-6},
    {"convnext_base", {3, 3, 27, 3}, {128, 256, 512, 1024}, 1e-6},
    {"convnext_large", {3, 3, 27, 3}, {192, 384, 768, 1536}, 1e-6},
    {"convnext_xlarge", {3, 3, 27, 3}, {256, 512, 1024, 2048}, 1e-6},
    {"convnext_xxlarge", {3, 4, 30, 3}, {384, 768, 1536, 3072}, 1e-5},
}};

// A string key's value (absent or null: OpenCLIP's default `dflt`).
std::string string_key(const json& v, const char* key, const char* dflt, const std::string& where) {
  if (!v.contains(key) || v[key].is_null()) return dflt;
  if (!v[key].is_string()) OC_USER_ERROR("{}: \"{}\" must be a string, got {}", where, key, v[key].dump());
  return v[key].get<std::string>();
}
}  // namespace

const ConvNextSpec* find_convnext(std::string_view name) {
  for (const ConvNextSpec& s : kConvNexts)
    if (s.name == name) return &s;
  return nullptr;
}

bool is_convnext_vision_cfg(const json& v) {
  const json& n = v.value("timm_model_name", json());
  return n.is_string() && find_convnext(n.get<std::string>());
}

bool is_convnext(const VisionCfg& v) { return find_convnext(v.timm_model_name) != nullptr; }

void read_convnext_vision(const json& v, VisionCfg* c, const std::string& where) {
  const ConvNextSpec& s = *find_convnext(v["timm_model_name"].get<std::string>());
  const std::string model(s.name);
  // TimmModel: pool "" keeps timm's head pool (avg), "avg" sets the same; proj "linear" adds
  // head.proj (no bias), "mlp" head.mlp (fc1 with bias, GELU, fc2 without).
  if (const std::string pool = string_key(v, "timm_pool", "avg", where); pool != "" && pool != "avg")
    OC_USER_ERROR(
        "{}: \"timm_pool\" {} is not supported with the timm ConvNeXt {}: openclip-cpp builds \"\" / \"avg\" "
        "(timm's average pool and head norm)",
        where, v["timm_pool"].dump(), model);
  const std::string proj = string_key(v, "timm_proj", "linear", where);
  if (proj != "linear" && proj != "mlp")
    OC_USER_ERROR(
        "{}: \"timm_proj\" {} is not supported with the timm ConvNeXt {}: openclip-cpp builds \"linear\" and "
        "\"mlp\"",
        where, v["timm_proj"].dump(), model);
  for (const char* k : {"layers", "width", "head_width", "patch_size", "mlp_ratio", "ls_init_value", "patch_dropout",
                        "no_ln_pre", "pool_type", "final_ln_after_pool"})
    if (v.contains(k) && !v[k].is_null())
      OC_USER_ERROR(
          "{}: \"{}\" is an option of OpenCLIP's own towers, which OpenCLIP ignores for the timm ConvNeXt {}; "
          "remove the key",
          where, k, model);
  if (v.contains("timm_drop_path") && !v["timm_drop_path"].is_null()) {
    const json& d = v["timm_drop_path"];
    if (!d.is_number() || !(d.get<double>() >= 0 && d.get<double>() < 1))
      OC_USER_ERROR("{}: \"timm_drop_path\" must be a number in [0, 1), got {}", where, d.dump());
    c->drop_path = d.get<double>();
  }
  if (v.contains("image_size") && !v["image_size"].is_number_integer())
    OC_USER_ERROR("{}: \"image_size\" must be an integer, got {}", where, v["image_size"].dump());
  c->image_size = v.value("image_size", 224);
  c->timm_model_name = model;
  c->head_mlp = proj == "mlp";
  c->ln_eps = s.ln_eps;
  c->patch_size = 32;  // the total stride: grid() is the last stage's map
  c->layers = s.depths[0] + s.depths[1] + s.depths[2] + s.depths[3];
  c->width = s.dims[3];
  c->head_width = s.dims[3];  // no attention: one "head" keeps the shared width checks quiet
}

void check_convnext(const VisionCfg& c, const std::string& where) {
  if (c.image_size % 32)
    OC_USER_ERROR("{}: \"image_size\" {} is not a multiple of 32, the timm ConvNeXt {}'s total stride", where,
                  c.image_size, c.timm_model_name);
}

void ConvNextTower::write_vision_cfg(json* v) const {
  const VisionCfg& c = cfg_.vision;
  *v = {{"image_size", c.image_size},
        {"timm_model_name", c.timm_model_name},
        {"timm_model_pretrained", false},
        {"timm_pool", ""},
        {"timm_proj", c.head_mlp ? "mlp" : "linear"},
        {"timm_drop", 0.0},
        {"timm_drop_path", c.drop_path}};
}

}  // namespace oc
