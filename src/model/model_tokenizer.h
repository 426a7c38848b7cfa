// The text tokenizer a model uses, as OpenCLIP's get_tokenizer(model_name): CLIP's byte-level
// BPE, or Hugging Face's WordPiece for configs whose text_cfg names hf_tokenizer_name (the
// -CLIPA ones), at the config's context length.
#pragma once
#include <memory>
#include <string>

#include "model/config.h"
#include "text/text_tokenizer.h"

namespace oc {

// vocab: the vocabulary file (BPE: --vocab; WordPiece: --hf-tokenizer-vocab); empty: the
// usual search (OPENCLIP_DATA_DIR, data/, share/openclip). A missing vocabulary is an
// oc::Error that names where it looked.
std::shared_ptr<const TextTokenizer> model_tokenizer(const ModelCfg& cfg, const std::string& vocab = "");

}  // namespace oc
