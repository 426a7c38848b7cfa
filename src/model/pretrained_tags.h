// OpenCLIP 2.24.0's pretrained tags (pretrained.py's _PRETRAINED, generated into
// pretrained_tags_table.inc by scripts/gen_pretrained_tags.py): per model and tag where
// OpenCLIP downloads the weights and the preprocessing it applies with them.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace oc {

struct PretrainedTag {
  const char *model, *tag, *hf_hub, *url;
  std::array<float, 3> mean, std;
  const char *interpolation, *resize_mode;  // "bicubic"|"bilinear", "shortest"|"longest"|"squash"
};

// The tag of `model` (OpenCLIP's _clean_tag: case-insensitive, '-' as '_'; '/' in the model
// name as '-'), or nullptr.
const PretrainedTag* find_pretrained_tag(std::string_view model, std::string_view tag);
// The tags of `model` (list_pretrained_tags_by_model), in the table's order.
std::vector<std::string> pretrained_tags_of(std::string_view model);

}  // namespace oc
