// The model configs this build accepts, by image tower family, and the check of one config
// without building the model (`openclip models`, `openclip models --check FILE|NAME`).
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace oc {

struct ConfigSummary {
  std::string name;
  std::string family;     // the image tower's (ImageTower::family)
  std::string image;      // its size (ImageTower::describe)
  std::string tokenizer;  // "CLIP BPE" or text_cfg.hf_tokenizer_name
  int64_t params = 0;     // parameters (no buffers)
};

// Everything a model is checked for before anything is allocated: the config's keys and
// numbers (parse_model_config, config_limits.h), its image tower family (a refused tower
// names its key), its tokenizer and tokenizer_kwargs (text/text_tokenizer.h), and the size of
// its parameter table (kModelParamCap). Throws oc::Error naming the refusing key.
ConfigSummary check_model_config(const ModelCfg& cfg);
// One line: "ViT-B-32: OpenCLIP ViT image tower (224 px, patch 32, 12 blocks of width 768);
// text 12 blocks of width 512, context 77, CLIP BPE tokenizer; embed_dim 512; 151.28 M parameters".
std::string summary_line(const ModelCfg& cfg, const ConfigSummary& s);

// The built-in configs (builtin_model_names), checked, grouped by family in the order the
// families first appear; within a family, by name.
struct FamilyConfigs {
  std::string family;
  std::vector<std::string> names;
};
std::vector<FamilyConfigs> builtin_configs_by_family();

}  // namespace oc
