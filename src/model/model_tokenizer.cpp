#include "model/model_tokenizer.h"

#include <vector>

#include "core/check.h"
#include "core/fs.h"
#include "model/hub_source.h"

namespace oc {
namespace {

// The tokenizer file: --hf-tokenizer-vocab, else the model folder's or repo's own file, else the
// hub repository named by hf_tokenizer_name (as OpenCLIP).
std::shared_ptr<const TextTokenizer> make_model_text_tokenizer(TextTokenizerSpec spec, const std::string& vocab,
                                                               const std::string& tokenizer_dir) {
  if (!vocab.empty() || spec.hf_tokenizer_name.empty()) return make_text_tokenizer(spec);
  const bool sp = is_sentencepiece_tokenizer_name(spec.hf_tokenizer_name);
  const std::vector<std::string> files =
      sp ? std::vector<std::string>{"tokenizer.json", "spiece.model"} : std::vector<std::string>{"vocab.txt"};
  for (const std::string& f : files)
    if (!tokenizer_dir.empty() && fs::exists(fs::join(tokenizer_dir, f))) {
      spec.vocab_path = fs::join(tokenizer_dir, f);
      return make_text_tokenizer(spec);
    }
  try {
    return make_text_tokenizer(spec);
  } catch (const oc::Error&) {  // not on disk: the hub repository of that name, as OpenCLIP
    spec.vocab_path = hub_tokenizer_file(spec.hf_tokenizer_name, sp);
    if (spec.vocab_path.empty()) throw;
  }
  return make_text_tokenizer(spec);
}

// Checked here, once, rather than per batch: an id past the embedding table would fail every
// text of the batch it lands in.
std::shared_ptr<const TextTokenizer> checked_against_vocab(const ModelCfg& cfg,
                                                           std::shared_ptr<const TextTokenizer> tok,
                                                           const std::string& vocab) {
  if (tok->id_limit() > cfg.text.vocab_size)
    OC_USER_ERROR(
        "model {}: its tokenizer {} gives ids up to {}, but text_cfg.vocab_size is {} (ids must be below "
        "it): the tokenizer file{} belongs to another model",
        cfg.name, tok->name(), tok->id_limit() - 1, cfg.text.vocab_size, vocab.empty() ? "" : " " + vocab);
  return tok;
}

}  // namespace

std::shared_ptr<const TextTokenizer> model_tokenizer(const ModelCfg& cfg, const std::string& vocab,
                                                     const std::string& tokenizer_dir, const std::string& vocab_flag) {
  TextTokenizerSpec spec = text_tokenizer_spec_from_config(model_config_json(cfg), cfg.name);
  spec.vocab_path = vocab;
  spec.vocab_flag = vocab_flag;
  return checked_against_vocab(cfg, make_model_text_tokenizer(spec, vocab, tokenizer_dir), vocab);
}

}  // namespace oc
