#include "model/model_tokenizer.h"

#include <vector>

#include "core/check.h"
#include "core/fs.h"
#include "model/hub_source.h"

namespace oc {

std::shared_ptr<const TextTokenizer> model_tokenizer(const ModelCfg& cfg, const std::string& vocab,
                                                     const std::string& tokenizer_dir, const std::string& vocab_flag) {
  TextTokenizerSpec spec = text_tokenizer_spec_from_config(model_config_json(cfg), cfg.name);
  spec.vocab_path = vocab;
  spec.vocab_flag = vocab_flag;
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

}  // namespace oc
