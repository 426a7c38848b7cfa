#include "model/model_catalog.h"

#include <fmt/format.h>

#include <algorithm>

#include "model/image_tower.h"
#include "model/params.h"
#include "text/text_tokenizer.h"

namespace oc {

ConfigSummary check_model_config(const ModelCfg& cfg) {
  ConfigSummary s;
  s.name = cfg.name;
  const std::unique_ptr<ImageTower> image = make_image_tower(cfg);
  s.family = image->family();
  s.image = image->describe();
  // tokenizer_kwargs as the tokenizer reads them (its loading, which needs the vocabulary, is not done here).
  const TextTokenizerSpec spec = text_tokenizer_spec_from_config(model_config_json(cfg), cfg.name);
  s.tokenizer = spec.hf_tokenizer_name.empty() ? "CLIP BPE" : spec.hf_tokenizer_name;
  s.params = make_param_table(cfg).count();  // the table only: names, shapes, the cap
  return s;
}

std::string summary_line(const ModelCfg& c, const ConfigSummary& s) {
  return fmt::format(
      "{}: {} image tower ({}); text {} blocks of width {}, context {}, {} tokenizer; embed_dim {}; "
      "{:.2f} M parameters",
      c.name, s.family, s.image, c.text.layers, c.text.width, c.text.context_length, s.tokenizer, c.embed_dim,
      double(s.params) / 1e6);
}

std::vector<FamilyConfigs> builtin_configs_by_family() {
  std::vector<FamilyConfigs> out;
  std::vector<std::string> names = builtin_model_names();
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string family = check_model_config(load_model_config(n)).family;
    auto it = std::find_if(out.begin(), out.end(), [&](const FamilyConfigs& f) { return f.family == family; });
    if (it == out.end()) it = out.insert(out.end(), FamilyConfigs{family, {}});
    it->names.push_back(n);
  }
  return out;
}

}  // namespace oc
