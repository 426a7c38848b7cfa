// Model configs in OpenCLIP's JSON format ({"embed_dim", "vision_cfg", "text_cfg",
// "quick_gelu"}). Built-in names come from configs/models/*.json embedded at build time;
// --model may also be a path to a JSON file.
#pragma once
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
  int heads() const { return width / head_width; }
  int grid() const { return image_size / patch_size; }
  int tokens() const { return grid() * grid() + 1; }  // patches + class token
  int mlp_width() const { return int(width * mlp_ratio); }
};

struct TextCfg {
  int context_length = 77;
  int vocab_size = 49408;
  int width = 512;
  int heads = 8;
  int layers = 12;
  double mlp_ratio = 4.0;
  int mlp_width() const { return int(width * mlp_ratio); }
};

struct ModelCfg {
  std::string name;
  int embed_dim = 512;
  bool quick_gelu = false;
  double ln_eps = 1e-5;
  VisionCfg vision;
  TextCfg text;
};

// Name of an embedded config, or a path to a JSON file. Errors name the file and the field
// and list the built-in names.
ModelCfg load_model_config(const std::string& name_or_path);
// `source` (a file path) names the config in errors; the name is used when it is empty.
ModelCfg parse_model_config(const std::string& json_text, const std::string& name, const std::string& source = "");
std::vector<std::string> builtin_model_names();
// The JSON text of a config (OpenCLIP's format), e.g. to store next to exported weights.
std::string model_config_json(const ModelCfg& cfg);

// Parameter count and forward GFLOPs per sample (1 MAC = 2 FLOPs, as OpenCLIP's profile),
// text at the full context length.
int64_t count_params(const ModelCfg& cfg);
double forward_gflops_image(const ModelCfg& cfg);
double forward_gflops_text(const ModelCfg& cfg, int text_tokens);

}  // namespace oc
