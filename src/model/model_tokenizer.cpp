#include "model/model_tokenizer.h"

namespace oc {

std::shared_ptr<const TextTokenizer> model_tokenizer(const ModelCfg& cfg, const std::string& vocab) {
  TextTokenizerSpec spec = text_tokenizer_spec_from_config(model_config_json(cfg), cfg.name);
  spec.vocab_path = vocab;
  return make_text_tokenizer(spec);
}

}  // namespace oc
