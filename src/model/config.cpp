#include "model/config.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "core/check.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "model/config_keys.h"
#include "model/config_limits.h"
#include "model/convnext/config_convnext.h"
#include "model/image_tower.h"
#include "model/params.h"
#include "model/resnet/config_resnet.h"
#include "model/eva/config_eva.h"
#include "model/timm_vit/config_timm.h"
#include "model/transformer.h"
#include "text/text_tokenizer.h"

namespace oc {

// Generated at build time from configs/models/*.json (cmake/embed_configs.cmake).
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_model_configs();

namespace {
using nlohmann::json;

template <class T>
void read_field(const json& obj, const char* key, T* out, const std::string& where) {
  if (!obj.contains(key)) return;
  const json& v = obj[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) OC_USER_ERROR("{}: \"{}\" must be true or false", where, key);
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) OC_USER_ERROR("{}: \"{}\" must be an integer, got {}", where, key, v.dump());
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                                             : v.get<int64_t>() >= int64_t(std::numeric_limits<T>::min()) &&
                                                   v.get<int64_t>() <= int64_t(std::numeric_limits<T>::max());
    if (!fits) OC_USER_ERROR("{}: \"{}\" is out of range: {}", where, key, v.dump());
  } else {
    if (!v.is_number()) OC_USER_ERROR("{}: \"{}\" must be a number, got {}", where, key, v.dump());
  }
  *out = v.get<T>();
}

// A string option with its allowed values; returns the index of the value read (0 if absent).
int read_choice(const json& obj, const char* key, std::initializer_list<const char*> allowed, const std::string& where) {
  if (!obj.contains(key)) return 0;
  const json& v = obj[key];
  std::string names;
  int i = 0;
  for (const char* a : allowed) {
    if (v.is_string() && v.get<std::string>() == a) return i;
    names += (i++ ? ", " : "") + std::string(a);
  }
  OC_USER_ERROR("{}: \"{}\" is {}; openclip-cpp builds {} (\"none\" returns every token's features, which CLIP's "
                "contrastive loss cannot use)",
                where, key, v.dump(), names);
}

// ls_init_value: null (no LayerScale) or a number.
void read_layer_scale(const json& obj, std::optional<double>* out, const std::string& where) {
  if (!obj.contains("ls_init_value") || obj["ls_init_value"].is_null()) return;
  double v = 0;
  read_field(obj, "ls_init_value", &v, where);
  *out = v;
}

// The OpenCLIP VisionTransformer options (config_keys.cpp accepts them).
void read_vision_options(const json& v, VisionCfg* c, const std::string& where) {
  read_layer_scale(v, &c->ls_init_value, where);
  read_field(v, "patch_dropout", &c->patch_dropout, where);
  if (!(c->patch_dropout >= 0 && c->patch_dropout < 1))
    OC_USER_ERROR("{}: \"patch_dropout\" must be in [0, 1), got {}", where, c->patch_dropout);
  read_field(v, "no_ln_pre", &c->no_ln_pre, where);
  read_field(v, "final_ln_after_pool", &c->final_ln_after_pool, where);
  c->avg_pool = read_choice(v, "pool_type", {"tok", "avg"}, where) == 1;
}

// norm_kwargs: the LayerNorm's keyword arguments; OpenCLIP's configs pass {"eps": x} only.
void read_norm_kwargs(const json& t, double* eps, const std::string& where) {
  if (!t.contains("norm_kwargs") || t["norm_kwargs"].is_null()) return;
  const json& k = t["norm_kwargs"];
  if (!k.is_object()) OC_USER_ERROR("{}: \"norm_kwargs\" must be an object", where);
  for (auto& [key, value] : k.items())
    if (key != "eps")
      OC_USER_ERROR("{}: \"norm_kwargs\": \"{}\" is not implemented (only \"eps\" is)", where, key);
  read_field(k, "eps", eps, where + " norm_kwargs");
  if (!(*eps > 0 && *eps < 1)) OC_USER_ERROR("{}: \"norm_kwargs\": \"eps\" must be in (0, 1), got {}", where, *eps);
}

// act_kwargs: the keyword arguments of the activation class. OpenCLIP passes them to nn.GELU
// (QuickGELU takes none); {"approximate": "tanh"} or {"approximate": "none"} are built.
void read_act_kwargs(const json& t, bool quick_gelu, bool* gelu_tanh, const std::string& where) {
  if (!t.contains("act_kwargs") || t["act_kwargs"].is_null()) return;
  const json& k = t["act_kwargs"];
  if (!k.is_object()) OC_USER_ERROR("{}: \"act_kwargs\" must be an object, got {}", where, k.dump());
  for (auto& [key, value] : k.items()) {
    if (key != "approximate")
      OC_USER_ERROR("{}: \"act_kwargs\": \"{}\" is not implemented (only nn.GELU's \"approximate\" is)", where, key);
    if (value != "tanh" && value != "none")
      OC_USER_ERROR("{}: \"act_kwargs\": \"approximate\" must be \"tanh\" or \"none\" (nn.GELU's), got {}", where,
                    value.dump());
    if (quick_gelu)
      OC_USER_ERROR(
          "{}: \"act_kwargs\" with \"quick_gelu\": true: QuickGELU takes no arguments (OpenCLIP fails "
          "building it); remove one of the keys",
          where);
    *gelu_tanh = value == "tanh";
  }
}

// The OpenCLIP TextTransformer options (config_keys.cpp accepts them).
void read_text_options(const json& t, TextCfg* c, const std::string& where) {
  read_layer_scale(t, &c->ls_init_value, where);
  read_field(t, "no_causal_mask", &c->no_causal_mask, where);
  read_field(t, "proj_bias", &c->proj_bias, where);
  read_field(t, "pad_id", &c->pad_id, where);
  read_field(t, "final_ln_after_pool", &c->final_ln_after_pool, where);
  c->pool = TextCfg::Pool(read_choice(t, "pool_type", {"argmax", "first", "last"}, where));
  if (t.contains("hf_tokenizer_name") && !t["hf_tokenizer_name"].is_null()) {
    const json& n = t["hf_tokenizer_name"];
    if (!n.is_string() || (n.get<std::string>() != "bert-base-uncased" &&
                           !is_sentencepiece_tokenizer_name(n.get<std::string>())))
      OC_USER_ERROR("{}: \"hf_tokenizer_name\" {} is not supported: openclip-cpp has Hugging Face's "
                    "\"bert-base-uncased\" WordPiece tokenizer (the -CLIPA configs), the SigLIP configs' "
                    "SentencePiece ones (\"timm/...SigLIP...\") and CLIP's BPE (no key)",
                    where, n.dump());
    c->hf_tokenizer_name = n.get<std::string>();
  }
  if (t.contains("tokenizer_kwargs") && !t["tokenizer_kwargs"].is_null()) {
    if (!t["tokenizer_kwargs"].is_object()) OC_USER_ERROR("{}: \"tokenizer_kwargs\" must be an object", where);
    c->tokenizer_kwargs_json = t["tokenizer_kwargs"].dump();
  }
  read_norm_kwargs(t, &c->ln_eps, where);
}
}  // namespace

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (auto& [n, _] : embedded_model_configs()) names.emplace_back(n);
  return names;
}

ModelCfg parse_model_config(const std::string& text, const std::string& name, const std::string& source) {
  const std::string where = "model config " + (source.empty() ? name : source);
  json j = parse_json(text, where);
  if (!j.is_object()) OC_USER_ERROR("{}: expected a JSON object", where);
  check_config_keys(j, ConfigSection::Top, where);
  ModelCfg c;
  c.name = name;
  read_field(j, "embed_dim", &c.embed_dim, where);
  read_field(j, "quick_gelu", &c.quick_gelu, where);
  read_field(j, "custom_text", &c.custom_text, where);
  read_field(j, "init_logit_scale", &c.init_logit_scale, where);
  if (j.contains("init_logit_bias") && !j["init_logit_bias"].is_null()) {
    double b = 0;
    read_field(j, "init_logit_bias", &b, where);
    c.init_logit_bias = b;
  }
  if (!j.contains("vision_cfg") || !j["vision_cfg"].is_object())
    OC_USER_ERROR("model config {}: missing object \"vision_cfg\"", name);
  if (!j.contains("text_cfg") || !j["text_cfg"].is_object())
    OC_USER_ERROR("model config {}: missing object \"text_cfg\"", name);
  const json& v = j["vision_cfg"];
  const std::string vw = where + " vision_cfg";
  check_config_keys(v, ConfigSection::Vision, vw);
  if (v.contains("hf_model_name") && !v["hf_model_name"].is_null())
    OC_USER_ERROR("{}: \"hf_model_name\" towers are not supported", vw);
  if (v.contains("timm_model_name") && is_eva_vision_cfg(v)) {
    read_eva_vision(v, &c.vision, vw);
  } else if (is_convnext_vision_cfg(v)) {
    read_convnext_vision(v, &c.vision, vw);
  } else if (v.contains("timm_model_name") && !v["timm_model_name"].is_null()) {
    read_timm_vision(v, c.embed_dim, &c.vision, vw);
  } else {
    refuse_timm_head_keys(v, vw);
    read_field(v, "image_size", &c.vision.image_size, vw);
    if (is_resnet_vision_cfg(v))
      read_resnet_layers(v, &c.vision, vw);
    else
      read_field(v, "layers", &c.vision.layers, vw);
    read_field(v, "width", &c.vision.width, vw);
    read_field(v, "head_width", &c.vision.head_width, vw);
    if (!c.vision.resnet()) read_field(v, "patch_size", &c.vision.patch_size, vw);
    read_field(v, "mlp_ratio", &c.vision.mlp_ratio, vw);
    read_vision_options(v, &c.vision, vw);
  }
  const json& t = j["text_cfg"];
  const std::string tw = where + " text_cfg";
  if (t.contains("hf_model_name") && !t["hf_model_name"].is_null())
    OC_USER_ERROR("{}: Hugging Face text towers are not supported", tw);
  check_config_keys(t, ConfigSection::Text, tw);
  read_field(t, "context_length", &c.text.context_length, tw);
  read_field(t, "vocab_size", &c.text.vocab_size, tw);
  read_field(t, "width", &c.text.width, tw);
  read_field(t, "heads", &c.text.heads, tw);
  read_field(t, "layers", &c.text.layers, tw);
  read_field(t, "mlp_ratio", &c.text.mlp_ratio, tw);
  read_text_options(t, &c.text, tw);
  read_act_kwargs(t, c.quick_gelu, &c.text.gelu_tanh, tw);
  validate_model_numbers(c, where, vw, tw);
  return c;
}

void use_siglip_init(ModelCfg& cfg) {
  cfg.init_logit_scale = std::log(10.0);
  cfg.init_logit_bias = -10.0;
}

ModelCfg load_model_config(const std::string& name_or_path) {
  std::string key = name_or_path;
  for (auto& ch : key)
    if (ch == '/') ch = '-';  // OpenCLIP replaces '/' in names
  for (auto& [n, text] : embedded_model_configs())
    if (n == key) return parse_model_config(std::string(text), key);
  if (fs::exists(name_or_path)) {
    auto text = fs::read_text(name_or_path);
    if (!text) OC_USER_ERROR("{}", text.error());
    std::string base = fs::basename(name_or_path);
    if (auto dot = base.rfind(".json"); dot != std::string::npos) base = base.substr(0, dot);
    return parse_model_config(text.value(), base, name_or_path);
  }
  std::string names;
  for (auto& n : builtin_model_names()) names += (names.empty() ? "" : ", ") + n;
  OC_USER_ERROR("unknown model '{}': not a built-in config ({}) and not a JSON file", name_or_path, names);
}

namespace {
// The non-default OpenCLIP options, as OpenCLIP's JSON spells them.
void add_option_json(const ModelCfg& c, json* j) {
  json& v = (*j)["vision_cfg"];
  json& t = (*j)["text_cfg"];
  if (c.vision.ls_init_value) v["ls_init_value"] = *c.vision.ls_init_value;
  if (c.vision.patch_dropout > 0) v["patch_dropout"] = c.vision.patch_dropout;
  if (c.vision.no_ln_pre) v["no_ln_pre"] = true;
  if (c.vision.avg_pool) v["pool_type"] = "avg";
  if (c.vision.final_ln_after_pool) v["final_ln_after_pool"] = true;
  if (c.text.ls_init_value) t["ls_init_value"] = *c.text.ls_init_value;
  if (c.text.no_causal_mask) t["no_causal_mask"] = true;
  if (c.text.pool != TextCfg::Pool::Argmax) t["pool_type"] = c.text.pool == TextCfg::Pool::First ? "first" : "last";
  if (c.text.proj_bias) t["proj_bias"] = true;
  if (c.text.pad_id != 0) t["pad_id"] = c.text.pad_id;
  if (c.text.final_ln_after_pool) t["final_ln_after_pool"] = true;
  if (!c.text.hf_tokenizer_name.empty()) t["hf_tokenizer_name"] = c.text.hf_tokenizer_name;
  if (!c.text.tokenizer_kwargs_json.empty())
    t["tokenizer_kwargs"] = parse_json(c.text.tokenizer_kwargs_json, "text_cfg.tokenizer_kwargs");
  if (c.text.mlp_ratio != 4.0) t["mlp_ratio"] = c.text.mlp_ratio;
  if (c.text.ln_eps != 1e-5) t["norm_kwargs"] = {{"eps", c.text.ln_eps}};
  if (c.text.gelu_tanh) t["act_kwargs"] = {{"approximate", "tanh"}};
  if (c.custom_text) (*j)["custom_text"] = true;
  make_image_tower(c)->write_vision_cfg(&v);
}
}  // namespace

std::string model_config_json(const ModelCfg& c) {
  json j;
  j["embed_dim"] = c.embed_dim;
  if (c.quick_gelu) j["quick_gelu"] = true;
  if (c.init_logit_scale != std::log(1.0 / 0.07)) j["init_logit_scale"] = c.init_logit_scale;
  if (c.init_logit_bias) j["init_logit_bias"] = *c.init_logit_bias;
  j["vision_cfg"] = {{"image_size", c.vision.image_size}, {"layers", c.vision.layers},
                     {"width", c.vision.width},           {"head_width", c.vision.head_width},
                     {"patch_size", c.vision.patch_size}, {"mlp_ratio", c.vision.mlp_ratio}};
  j["text_cfg"] = {{"context_length", c.text.context_length}, {"vocab_size", c.text.vocab_size},
                   {"width", c.text.width}, {"heads", c.text.heads}, {"layers", c.text.layers}};
  add_option_json(c, &j);
  return j.dump(2);
}

int64_t count_params(const ModelCfg& c) { return make_param_table(c).count(); }

double forward_gflops_image(const ModelCfg& c) { return 2 * make_image_tower(c)->forward_macs() / 1e9; }

double forward_gflops_text(const ModelCfg& c, int T) {
  const auto& t = c.text;
  double macs = t.layers * transformer_block_macs(T, t.width, t.mlp_width()) + double(t.width) * c.embed_dim;
  return 2 * macs / 1e9;
}

}  // namespace oc
