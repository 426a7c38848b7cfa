// Model configs in OpenCLIP's JSON format ({"embed_dim", "vision_cfg", "text_cfg",
// "quick_gelu"}). Built-in names come from configs/models/*.json embedded at build time;
// --model may also be a path to a JSON file.
#pragma once
#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace oc {

struct VisionCfg {
  int image_size = 224;
  int layers = 12;
  int width = 768;
  int head_width = 64;
  int patch_size = 32;
  double mlp_ratio = 4.0;
  // OpenCLIP's VisionTransformer options (the -CLIPA and -alt configs).
  std::optional<double> ls_init_value;  // LayerScale (ls_1/ls_2.gamma) in every block when set
  double patch_dropout = 0.0;           // training only: fraction of patches dropped
  bool no_ln_pre = false;               // no ln_pre (and no visual.ln_pre.* parameters)
  bool avg_pool = false;                // pool_type "avg" (mean of the patch tokens); else "tok"
  bool final_ln_after_pool = false;     // ln_post on the pooled vector instead of every token
  double ln_eps = 1e-5;                 // every LayerNorm of the tower (timm's: 1e-6)
  // A timm tower (vision_cfg.timm_model_name): OpenCLIP's TimmModel around timm's
  // VisionTransformer without class token, with MAP pooling and no projection (the SigLIP
  // configs, model/timm_vit/config_timm.h), or around a timm ConvNeXt (model/convnext/); the
  // sizes above are then the timm model's. Empty: OpenCLIP's ViT or ModifiedResNet.
  std::string timm_model_name;
  bool timm() const { return !timm_model_name.empty(); }
  // ModifiedResNet (OpenCLIP's RN configs: "layers" is a list of 4 block counts): the blocks
  // per stage; empty for the ViT. width is then the stem's width (64 for RN50), the attention
  // pool runs at width * 32 with width * 32 / head_width heads over (image_size / 32)^2 + 1 tokens.
  std::vector<int> resnet_layers;
  bool resnet() const { return !resnet_layers.empty(); }
  // OpenCLIP's TimmModel head and trunk options, read for the timm ConvNeXts
  // (model/convnext/config_convnext.h; the timm model name fixes their sizes).
  bool head_mlp = false;   // timm_proj "mlp": OpenCLIP's Mlp(C, 2E, E) head; else "linear"
  double drop_path = 0.0;  // timm_drop_path: stochastic depth rate (training only)
  // A class token ahead of the patches (OpenCLIP's VisionTransformer); timm's SigLIP towers
  // have none (the timm reader clears it).
  bool class_token = true;
  int heads() const { return width / head_width; }  // the transformer's (ResNet: resnet/config_resnet.h)
  int grid() const { return image_size / patch_size; }
  int tokens() const { return grid() * grid() + (class_token ? 1 : 0); }
  int mlp_width() const { return int(width * mlp_ratio); }
};

struct TextCfg {
  int context_length = 77;
  int vocab_size = 49408;
  int width = 512;
  int heads = 8;
  int layers = 12;
  double mlp_ratio = 4.0;
  // OpenCLIP's TextTransformer options (the -CLIPA configs).
  enum class Pool { Argmax, First, Last };
  std::optional<double> ls_init_value;  // LayerScale in every block when set
  bool no_causal_mask = false;          // full attention between all tokens
  Pool pool = Pool::Argmax;             // pool_type
  bool proj_bias = false;               // text_projection is nn.Linear (weight [E,W] + bias)
  // Read and kept for the config's JSON, without effect as in OpenCLIP 2.24.0's CLIP: pad_id
  // only builds CoCa's cls mask, final_ln_after_pool is not passed to the text tower.
  int pad_id = 0;
  bool final_ln_after_pool = false;
  // The tokenizer (text/text_tokenizer.h reads these from the config's JSON): empty for
  // CLIP's BPE, "bert-base-uncased" for WordPiece; tokenizer_kwargs kept as JSON text.
  std::string hf_tokenizer_name;
  std::string tokenizer_kwargs_json;
  double ln_eps = 1e-5;  // every LayerNorm of the tower (text_cfg.norm_kwargs.eps)
  // text_cfg.act_kwargs {"approximate": "tanh"} (the SigLIP2 configs): the MLP's nn.GELU with
  // the tanh approximation instead of erf.
  bool gelu_tanh = false;
  int mlp_width() const { return int(width * mlp_ratio); }
};

struct ModelCfg {
  std::string name;
  int embed_dim = 512;
  bool quick_gelu = false;
  // CustomTextCLIP (custom_text, the SigLIP configs): the same text tower with its parameters
  // under text.* (CLIP flattens them to the top level).
  bool custom_text = false;
  // CLIP(init_logit_scale=ln(1/0.07), init_logit_bias=None); SigLIP (--siglip) uses ln(10)
  // and -10, and a logit_bias parameter exists only when init_logit_bias is set.
  double init_logit_scale = std::log(1.0 / 0.07);
  std::optional<double> init_logit_bias;
  VisionCfg vision;
  TextCfg text;
};

// Name of an embedded config, or a path to a JSON file. Errors name the file and the field
// and list the built-in names.
ModelCfg load_model_config(const std::string& name_or_path);
// `source` (a file path) names the config in errors; the name is used when it is empty.
ModelCfg parse_model_config(const std::string& json_text, const std::string& name, const std::string& source = "");
std::vector<std::string> builtin_model_names();
// OpenCLIP main.py's model_kwargs for --siglip, which override the config's:
// init_logit_scale ln(10), init_logit_bias -10.
void use_siglip_init(ModelCfg& cfg);
// The JSON text of a config (OpenCLIP's format), e.g. to store next to exported weights.
std::string model_config_json(const ModelCfg& cfg);

// Parameter count and forward GFLOPs per sample (1 MAC = 2 FLOPs, as OpenCLIP's profile),
// text at the full context length.
int64_t count_params(const ModelCfg& cfg);
double forward_gflops_image(const ModelCfg& cfg);
double forward_gflops_text(const ModelCfg& cfg, int text_tokens);

}  // namespace oc
