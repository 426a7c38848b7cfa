// What --model and --pretrained name, resolved as OpenCLIP's create_model resolves them. One
// resolution for every command (train, eval, embed, classify, index, serve, bench, the C++ and
// Python APIs):
//  - --model: a built-in config name, a JSON config file, or a whole model: hf-hub:ORG/NAME[@REV]
//    (downloaded into the Hugging Face cache, hub/hub.h), local-dir:PATH or a folder in that
//    layout (open_clip_config.json with model_cfg and preprocess_cfg; weights
//    open_clip_model.safetensors (3.x's, preferred) or open_clip_pytorch_model.bin (2.24's);
//    tokenizer files), whose weights load when --pretrained is not given;
//  - --pretrained: a weights file; a whole model as above (its config is used: --model is not);
//    or a tag of the model from OpenCLIP 2.24's or 3.3's pretrained.py, whose preprocessing
//    applies (mean/std, interpolation, resize mode) and whose weights come from a cache
//    (--cache-dir, the Hugging Face cache, ~/.cache/clip) or are downloaded as 3.3 does
//    (model/hub_source.h).
// Preprocessing merges as 2.24's: defaults, then the hub folder's preprocess_cfg, then the
// tag's, then the user's --image-* flags (the caller applies those last).
#pragma once
#include <string>
#include <vector>

#include "model/config.h"

namespace oc {

// Image mean/std (preprocess_cfg, --image-mean/--image-std): a number or a list of 1 or 3, each such that (pixel -
// mean) / std of a pixel in [0, 1] is a finite, moderate float. Published values: mean 0.40-0.5, std 0.26-0.5. A std
// under kMinStd (1e-3, 260x below the smallest published one) or a mean outside +-kMaxMean (1000) is no normalization
// of [0, 1] pixels; both bounds keep normalized pixels under 10^6, far from float overflow in the patch embedding's
// sums (std 0, 1e-45 or mean 3e38 made every embedding NaN).
inline constexpr double kMinStd = 1e-3, kMaxStd = 1e3, kMaxMean = 1e3;

struct PreprocessHint {   // OpenCLIP's preprocess_cfg fields that were given (empty: default)
  std::vector<float> mean, std;
  std::string interpolation, resize_mode;
  std::string source;     // where they came from, for the log ("" when nothing was given)
};

struct ModelSource {
  ModelCfg cfg;
  std::string weights;  // the file to load ("" for none: random init)
  PreprocessHint preprocess;
  std::string tokenizer_dir;  // the folder's or repository's files, read for its text tower ("" = none)
};

// True when `model` is a whole model (hf-hub:, local-dir:, a hub folder): it brings weights,
// so a command needs no --pretrained.
bool model_carries_weights(const std::string& model);
// The model a --model/--pretrained pair names: --pretrained when it is a whole model (it brings
// its own config), else --model (what an index records and checks).
std::string effective_model(const std::string& model, const std::string& pretrained);

ModelSource resolve_model_source(const std::string& model, const std::string& pretrained,
                                 const std::string& cache_dir = "");

}  // namespace oc
