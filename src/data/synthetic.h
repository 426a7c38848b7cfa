// Synthetic samples. "synthetic" is OpenCLIP's SyntheticDataset: a black image and the
// caption "Dummy caption" (for throughput tests). "synthetic-learnable" draws a colored
// shape on a noisy background and names it in the caption ("a photo of a red circle."),
// so a short training run can show the loss falling and zero-shot accuracy rising. Each
// sample is a pure function of its index.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "image/image.h"

namespace oc::data {

struct SyntheticSample {
  ImageU8 image;
  std::string caption;
  int64_t label = -1;
};

SyntheticSample synthetic_sample(int64_t index, int image_size);
SyntheticSample learnable_sample(int64_t index, int image_size = 64);
// The learnable classes, in label order ("red circle", ...), and their caption template.
const std::vector<std::string>& learnable_classnames();
inline constexpr const char* kLearnableTemplate = "a photo of a {c}.";

}  // namespace oc::data
