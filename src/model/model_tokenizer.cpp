#include "model/model_tokenizer.h"

#include "core/check.h"

namespace oc {

std::shared_ptr<const TextTokenizer> model_tokenizer(const ModelCfg& cfg, const std::string& vocab) {
  TextTokenizerSpec spec = text_tokenizer_spec_from_config(model_config_json(cfg), cfg.name);
  spec.vocab_path = vocab;
  std::shared_ptr<const TextTokenizer> tok = make_text_tokenizer(spec);
  // Checked here, once, rather than per batch: an id past the embedding table would fail every
  // text of the batch it lands in.
  if (tok->id_limit() > cfg.text.vocab_size)
    OC_USER_ERROR(
        "model {}: its tokenizer {} gives ids up to {}, but text_cfg.vocab_size is {} (ids must be below "
        "it): the tokenizer file{} belongs to another model",
        cfg.name, tok->name(), tok->id_limit() - 1, cfg.text.vocab_size, vocab.empty() ? "" : " " + vocab);
  return tok;
}

}  // namespace oc
