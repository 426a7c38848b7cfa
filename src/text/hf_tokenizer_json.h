// A Hugging Face `tokenizer.json` with a Unigram model (T5, SigLIP, mT5 as transformers saves
// them) or a BPE model (Gemma: SigLIP2), run as the `tokenizers` library (0.19) runs it: added
// tokens matched in the raw text, the normalizer, the pre-tokenizer, then the model
// (hf_model.h) on each pre-token.
// Supported parts (anything else is refused at load with its name):
//   normalizer:    null, Sequence, Precompiled (precompiled_charsmap.h), Replace with a String
//                  pattern or a Regex "<c>{n,}" / "<c>+", Strip, Prepend;
//   pre_tokenizer: null, Sequence, WhitespaceSplit, Metaspace (replacement, add_prefix_space or
//                  prepend_scheme always/first/never, split);
//   model:         Unigram (vocab [[piece, score], ...], unk_id, byte_fallback), BPE (hf_bpe.cpp:
//                  vocab, merges, unk_token, fuse_unk, byte_fallback; no dropout, no subword
//                  prefix or suffix);
//   post_processor: null or TemplateProcessing (its "single" template: special tokens before
//                  and after $A).
// added_tokens are all matched in the raw text, leftmost-longest; their lstrip/rstrip/single_word
// flags are not applied and tokenizers would match a normalized=true one after normalization (T5's
// <pad> </s> <unk> <extra_id_N> are all normalized=false, non-stripping).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace oc::text {

class HfTokenizerJson {
 public:
  // Parses `json_text` (the file's bytes); `source` names the file in errors. Throws oc::Error
  // naming the file and the JSON path of what is missing, malformed or unsupported.
  HfTokenizerJson(std::string_view json_text, const std::string& source);
  HfTokenizerJson(HfTokenizerJson&&) noexcept;
  HfTokenizerJson& operator=(HfTokenizerJson&&) noexcept;
  ~HfTokenizerJson();

  int32_t vocab_size() const;
  // One past the largest id encode and the post-processor can give (added tokens may lie past
  // the vocabulary).
  int32_t id_limit() const;
  int32_t unk_id() const;  // -1: none
  // The id of `piece` in the vocabulary (a later duplicate wins, as tokenizers' token_to_ids), or -1.
  int32_t piece_id(std::string_view piece) const;
  const std::string& piece(int32_t id) const;
  const std::vector<int32_t>& prefix_ids() const;  // post-processor: special tokens before $A
  const std::vector<int32_t>& suffix_ids() const;  // and after it ("</s>" for T5)
  const std::string& metaspace() const;            // the Metaspace replacement ("▁"), or ""

  // Ids of valid UTF-8 `text` without the post-processor's tokens (encode(text,
  // add_special_tokens=False)). Thread-safe. An error when the file's steps would grow the
  // text past the cap in hf_tokenizer_json.cpp (kMaxGrowth), never an exception.
  Status encode(std::string_view text, std::vector<int32_t>& ids) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::text
