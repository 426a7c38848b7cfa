#include "model/pretrained_tags.h"

#include <algorithm>
#include <cctype>

namespace oc {

namespace {
const PretrainedTag kTags[] = {
#include "model/pretrained_tags_table.inc"
};

std::string clean_tag(std::string_view t) {
  std::string s(t);
  for (char& c : s) c = c == '-' ? '_' : char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string clean_model(std::string_view m) {
  std::string s(m);
  std::replace(s.begin(), s.end(), '/', '-');
  return s;
}
}  // namespace

const PretrainedTag* find_pretrained_tag(std::string_view model, std::string_view tag) {
  const std::string m = clean_model(model), t = clean_tag(tag);
  for (const PretrainedTag& p : kTags)
    if (m == p.model && t == p.tag) return &p;
  return nullptr;
}

std::span<const PretrainedTag> all_pretrained_tags() { return kTags; }

std::vector<std::string> pretrained_tags_of(std::string_view model) {
  const std::string m = clean_model(model);
  std::vector<std::string> out;
  for (const PretrainedTag& p : kTags)
    if (m == p.model) out.emplace_back(p.tag);
  return out;
}

}  // namespace oc
