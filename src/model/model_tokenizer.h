// The text tokenizer a model uses, as OpenCLIP's get_tokenizer(model_name): CLIP's byte-level
// BPE, or Hugging Face's WordPiece for configs whose text_cfg names hf_tokenizer_name (the
// -CLIPA ones), at the config's context length.
#pragma once
#include <memory>
#include <string>

#include "model/config.h"
#include "text/text_tokenizer.h"

namespace oc {

// vocab: the vocabulary file (BPE: --vocab; WordPiece: --hf-tokenizer-vocab); empty: for a
// Hugging Face tokenizer the model folder's or repository's file (tokenizer_dir: SentencePiece
// tokenizer.json / spiece.model, WordPiece vocab.txt), then the usual search (OPENCLIP_DATA_DIR,
// data/, share/openclip), then the hf_tokenizer_name repository on the hub (cached or
// downloaded, as OpenCLIP's HFTokenizer). A missing vocabulary is an oc::Error that names where
// it looked and `vocab_flag` (the command's flag for the file; "" when it has none).
std::shared_ptr<const TextTokenizer> model_tokenizer(const ModelCfg& cfg, const std::string& vocab = "",
                                                     const std::string& tokenizer_dir = "",
                                                     const std::string& vocab_flag = "");

}  // namespace oc
