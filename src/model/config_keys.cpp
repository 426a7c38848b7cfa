#include "model/config_keys.h"

#include <string_view>
#include <vector>

#include "core/check.h"

namespace oc {
namespace {
using nlohmann::json;

enum class Kind {
  Read,         // parsed by parse_model_config
  DefaultOnly,  // an OpenCLIP option: accepted at its default value only
  Refused,      // a tower or model class this project does not build
};

struct Key {
  std::string_view name;
  Kind kind;
  json default_value;    // DefaultOnly: OpenCLIP's default (null for None)
  std::string_view why;  // DefaultOnly/Refused: what it does or why it is refused
};

// OpenCLIP 2.24.0 CLIP(...) keyword arguments and what create_model reads at the top level.
const std::vector<Key>& top_keys() {
  static const std::vector<Key> k = {
      {"embed_dim", Kind::Read, nullptr, ""},
      {"vision_cfg", Kind::Read, nullptr, ""},
      {"text_cfg", Kind::Read, nullptr, ""},
      {"quick_gelu", Kind::Read, nullptr, ""},
      {"init_logit_scale", Kind::Read, nullptr, ""},
      {"init_logit_bias", Kind::Read, nullptr, ""},
      {"custom_text", Kind::Read, nullptr, ""},
      {"multimodal_cfg", Kind::Refused, nullptr, "CoCa (a multimodal text decoder) is not built"},
  };
  return k;
}

// CLIPVisionCfg.
const std::vector<Key>& vision_keys() {
  static const std::vector<Key> k = {
      {"layers", Kind::Read, nullptr, ""},
      {"width", Kind::Read, nullptr, ""},
      {"head_width", Kind::Read, nullptr, ""},
      {"mlp_ratio", Kind::Read, nullptr, ""},
      {"patch_size", Kind::Read, nullptr, ""},
      {"image_size", Kind::Read, nullptr, ""},
      {"ls_init_value", Kind::Read, nullptr, ""},
      {"patch_dropout", Kind::Read, nullptr, ""},
      {"attentional_pool", Kind::DefaultOnly, false, "an attentional pooler, used by CoCa configs only"},
      {"attn_pooler_queries", Kind::DefaultOnly, 256, "the attentional pooler's queries"},
      {"attn_pooler_heads", Kind::DefaultOnly, 8, "the attentional pooler's heads"},
      {"no_ln_pre", Kind::Read, nullptr, ""},
      {"pos_embed_type", Kind::DefaultOnly, "learnable", "another positional embedding"},
      {"final_ln_after_pool", Kind::Read, nullptr, ""},
      {"pool_type", Kind::Read, nullptr, ""},
      {"output_tokens", Kind::DefaultOnly, false, "token outputs (CoCa)"},
      {"act_kwargs", Kind::DefaultOnly, nullptr, "activation arguments"},
      {"norm_kwargs", Kind::DefaultOnly, nullptr, "LayerNorm arguments"},
      {"timm_model_name", Kind::Read, nullptr, ""},  // the SigLIP ViTs (config_timm.cpp), ConvNeXts (convnext/)
      {"timm_model_pretrained", Kind::DefaultOnly, false, "timm weights"},
      {"timm_pool", Kind::Read, nullptr, ""},  // "map" with timm_model_name (config_timm.cpp)
      {"timm_proj", Kind::Read, nullptr, ""},  // "none" for the ViTs, "linear" / "mlp" for ConvNeXts
      {"timm_proj_bias", Kind::DefaultOnly, false, "timm projection bias"},
      {"timm_drop", Kind::DefaultOnly, 0.0, "timm head dropout"},
      {"timm_drop_path", Kind::Read, nullptr, ""},  // ConvNeXts only (config_convnext.cpp)
      {"hf_model_name", Kind::Refused, nullptr, "Hugging Face towers are not built"},
  };
  return k;
}

// CLIPTextCfg.
const std::vector<Key>& text_keys() {
  static const std::vector<Key> k = {
      {"context_length", Kind::Read, nullptr, ""},
      {"vocab_size", Kind::Read, nullptr, ""},
      {"width", Kind::Read, nullptr, ""},
      {"heads", Kind::Read, nullptr, ""},
      {"layers", Kind::Read, nullptr, ""},
      {"mlp_ratio", Kind::Read, nullptr, ""},
      {"hf_tokenizer_name", Kind::Read, nullptr, ""},
      {"tokenizer_kwargs", Kind::Read, nullptr, ""},
      {"ls_init_value", Kind::Read, nullptr, ""},
      {"embed_cls", Kind::DefaultOnly, false,
       "a CLS token embedding, used by CoCa only (OpenCLIP 2.24.0's CLIP cannot run it: its positional embedding gets "
       "one row more than the text)"},
      {"pad_id", Kind::Read, nullptr, ""},
      {"no_causal_mask", Kind::Read, nullptr, ""},
      {"final_ln_after_pool", Kind::Read, nullptr, ""},
      {"pool_type", Kind::Read, nullptr, ""},
      {"proj_bias", Kind::Read, nullptr, ""},
      {"proj_type", Kind::DefaultOnly, "linear", "another text projection"},
      {"output_tokens", Kind::DefaultOnly, false, "token outputs (CoCa)"},
      {"act_kwargs", Kind::Read, nullptr, ""},   // {"approximate": "tanh"} only (config.cpp; SigLIP2)
      {"norm_kwargs", Kind::Read, nullptr, ""},  // {"eps": x} only (config.cpp)
      {"hf_model_name", Kind::Refused, nullptr, "Hugging Face text towers are not built"},
      {"hf_model_pretrained", Kind::DefaultOnly, true, "Hugging Face weights"},
      {"hf_proj_type", Kind::DefaultOnly, "mlp", "the Hugging Face projection"},
      {"hf_pooler_type", Kind::DefaultOnly, "mean_pooler", "the Hugging Face pooler"},
  };
  return k;
}

const Key* find(const std::vector<Key>& keys, const std::string& name) {
  for (auto& k : keys)
    if (k.name == name) return &k;
  return nullptr;
}
}  // namespace

void check_config_keys(const json& obj, ConfigSection section, const std::string& where) {
  const auto& keys = section == ConfigSection::Top ? top_keys() : section == ConfigSection::Vision ? vision_keys()
                                                                                                   : text_keys();
  for (auto& [name, value] : obj.items()) {
    const Key* k = find(keys, name);
    if (!k)
      OC_USER_ERROR("{}: \"{}\" is not a key of OpenCLIP 2.24's model configs; check its spelling, or remove it", where,
                    name);
    // None/null always means "OpenCLIP's default" for the refused towers.
    if (k->kind == Kind::Refused && !value.is_null())
      OC_USER_ERROR("{}: \"{}\" is not supported: {}. openclip-cpp trains OpenCLIP's ViT CLIP models "
                    "(`openclip train --help` lists the built-in configs)",
                    where, name, k->why);
    if (k->kind == Kind::DefaultOnly && value != k->default_value)
      OC_USER_ERROR("{}: \"{}\": {} ({}) is not implemented; only OpenCLIP's default {} is. Remove the key to train "
                    "the standard model, or use a built-in config",
                    where, name, value.dump(), k->why, k->default_value.dump());
  }
}

}  // namespace oc
