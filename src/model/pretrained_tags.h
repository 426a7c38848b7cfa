// OpenCLIP's pretrained tags: every tag of 2.24.0's and 3.3.0's pretrained.py (_PRETRAINED,
// generated into pretrained_tags_table.inc by scripts/gen_pretrained_tags.py): per model and
// tag where OpenCLIP downloads the weights (3.3's source where 3.3 has the tag) and the
// preprocessing it applies with them.
#pragma once
#include <array>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oc {

struct PretrainedTag {
  const char *model, *tag;
  const char* hf_hub;      // "org/name/" or "org/name/file" (3.3's where it has the tag), or ""
  const char* hf_hub_224;  // 2.24's repository when 2.24 had one (a cache 2.24 filled), or ""
  const char* url;         // the direct URL (OpenAI's .pt, GitHub releases), or ""
  std::array<float, 3> mean, std;
  const char *interpolation, *resize_mode;  // "bicubic"|"bilinear", "shortest"|"longest"|"squash"
  const char* since;                        // "2.24" or "3.3": the first release with the tag
};

// The tag of `model` (OpenCLIP's _clean_tag: case-insensitive, '-' as '_'; '/' in the model
// name as '-'), or nullptr.
const PretrainedTag* find_pretrained_tag(std::string_view model, std::string_view tag);
// The tags of `model` (list_pretrained_tags_by_model), in the table's order.
std::vector<std::string> pretrained_tags_of(std::string_view model);
// Every (model, tag) of the table, for tests and listings.
std::span<const PretrainedTag> all_pretrained_tags();

}  // namespace oc
