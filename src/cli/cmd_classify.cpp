// openclip classify: label probabilities per image, softmax(100 x cosine), as the seed's
// inference script (OpenCLIP README) prints them.
#include <openclip/openclip.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "model/model_source.h"

namespace oc::cli {
namespace {

int run(const std::vector<std::string>& args) {
  ClassifyArgs a;
  if (!parse_flags("classify", args, &a)) return 0;
  if (a.pretrained.empty() && !model_carries_weights(a.model))
    OC_USER_ERROR(
        "classify needs --pretrained WEIGHTS|TAG|hf-hub:ORG/NAME, or --model a hub folder or hf-hub:ORG/NAME");
  const auto& images = a.images;
  const auto& labels = a.labels;
  if (images.empty()) OC_USER_ERROR("classify needs --image FILE...");
  if (labels.empty()) OC_USER_ERROR("classify needs --labels TEXT... (at least one label)");
  auto model = openclip::Model::load(a.model, a.pretrained, a);
  auto probs = model.classify(images, labels);
  for (size_t i = 0; i < images.size(); ++i) {
    if (a.json) {
      nlohmann::json j = {{"image", images[i]}, {"labels", labels}, {"probs", probs[i]}};
      std::printf("%s\n", j.dump().c_str());
    } else {
      std::printf("%s\nLabel probs: [", images[i].c_str());
      for (size_t l = 0; l < labels.size(); ++l) std::printf("%s%.4f", l ? ", " : "", probs[i][l]);
      std::printf("]\n");
      for (size_t l = 0; l < labels.size(); ++l) std::printf("  %6.2f%%  %s\n", 100 * probs[i][l], labels[l].c_str());
    }
  }
  return 0;
}

OC_REGISTER_COMMAND("classify", "label probabilities for images and texts (OpenCLIP's inference example)", run);

}  // namespace
}  // namespace oc::cli
