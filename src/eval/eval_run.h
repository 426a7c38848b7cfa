// The library's evaluation entry point (`openclip eval` without the printing): a model from
// a config and weights, evaluated on the data of `data` (zero-shot and/or retrieval).
#pragma once
#include <map>
#include <string>

#include "eval/evaluate.h"
#include "model/precision.h"

namespace oc {

struct EvalArgs {
  std::string model = "ViT-B-32", pretrained;
  Precision precision = Precision::Fp32;
  std::string int8_scales;     // --int8-scales (InferenceOptions::int8_scales)
  std::string device = "cpu";  // a registered backend (ops::resolve_device)
  int batch_size = 64;
  int threads = 0;  // 0: as set
  EvalData data;    // what to evaluate on (data.base: the loader settings; batch and model fields are set here)
};

// OpenCLIP's metric keys -> values. Throws a user error when there is nothing to evaluate.
std::map<std::string, double> eval(const EvalArgs& args);

}  // namespace oc
