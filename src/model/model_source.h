// What --model and --pretrained name, resolved as OpenCLIP 2.24's create_model resolves them,
// without a network:
//  - --model: a built-in config name, a JSON config file, or a folder in the Hugging Face hub
//    layout OpenCLIP reads for hf-hub:ORG/NAME (open_clip_config.json with model_cfg and
//    preprocess_cfg; weights open_clip_pytorch_model.bin (2.24's file) or
//    open_clip_model.safetensors (3.x's)), whose weights load when --pretrained is not given;
//  - --pretrained: a weights file, or a tag of the model from 2.24's pretrained.py, whose
//    preprocessing applies (mean/std, interpolation, resize mode) and whose weights are read
//    from where OpenCLIP's download puts them (--cache-dir, else the Hugging Face cache for hub
//    tags, ~/.cache/clip for URL tags). Nothing is downloaded.
// Preprocessing merges as 2.24's: defaults, then the hub folder's preprocess_cfg, then the
// tag's, then the user's --image-* flags (the caller applies those last).
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace oc {

struct PreprocessHint {   // OpenCLIP's preprocess_cfg fields that were given (empty: default)
  std::vector<float> mean, std;
  std::string interpolation, resize_mode;
  std::string source;     // where they came from, for the log ("" when nothing was given)
};

struct ModelSource {
  ModelCfg cfg;
  std::string weights;  // the file to load ("" for none: random init)
  PreprocessHint preprocess;
};

ModelSource resolve_model_source(const std::string& model, const std::string& pretrained,
                                 const std::string& cache_dir = "");

}  // namespace oc
