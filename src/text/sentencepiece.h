// SentencePiece unigram tokenizers (T5's 32,000 pieces, mT5's 250,000) as OpenCLIP 2.24 runs
// them for the SigLIP configs (text_cfg "hf_tokenizer_name": "timm/ViT-B-16-SigLIP...",
// tokenizer_kwargs {"clean": "canonicalize"}, context_length 64): HFTokenizer cleans with
// canonicalize, then transformers' T5TokenizerFast encodes, truncates to context_length - 1,
// appends "</s>" and pads with "</s>" (SigLIP's pad id 1). Reads either file of a model's
// Hugging Face folder:
//   spiece.model    SentencePiece's protobuf, run by libsentencepiece (spm_model.h): the ids of
//                   the `sentencepiece` package;
//   tokenizer.json  Hugging Face's JSON with a Unigram model (T5) or a BPE model with byte
//                   fallback (Gemma's, the SigLIP2 configs'), run by hf_tokenizer_json.h: the ids
//                   of the `tokenizers` library, which is what OpenCLIP itself runs. A
//                   tokenizer_config.json beside it of a Gemma (or Llama) tokenizer class sets
//                   the special tokens as transformers' GemmaTokenizerFast does: [bos] text
//                   [eos] per add_bos_token (default true) / add_eos_token (default false),
//                   padding with pad_token ("<pad>").
// The two agree except where the libraries do (docs/TOKENIZER.md). See docs/TOKENIZER.md.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace oc {

class SentencePieceTokenizer {
 public:
  enum class Format { SpieceModel, TokenizerJson };
  // OpenCLIP's clean= functions (tokenizer.py get_clean_fn); SigLIP uses Canonicalize.
  enum class Clean { Canonicalize, Whitespace, Lower, None };

  // Reads `path`: a JSON object (first non-space byte '{') is a tokenizer.json, anything else
  // must be a SentencePiece ModelProto. Throws oc::Error naming the file (and the byte offset
  // for a truncated or malformed protobuf, the JSON path for an unsupported tokenizer.json).
  static SentencePieceTokenizer load(const std::string& path, Clean clean = Clean::Canonicalize);
  // A tokenizer.json's text (`source` names it in errors); no tokenizer_config.json is read.
  static SentencePieceTokenizer load_json(std::string_view json_text, const std::string& source,
                                          Clean clean = Clean::Canonicalize);

  SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept;
  SentencePieceTokenizer& operator=(SentencePieceTokenizer&&) noexcept;
  ~SentencePieceTokenizer();

  Format format() const;
  int32_t vocab_size() const;
  int32_t id_limit() const;  // one past the largest id tokenize can write (>= vocab_size)
  int32_t unk_id() const;
  // The padding id: the model's eos piece "</s>" (1 in T5's and mT5's vocabularies), as
  // SigLIP pads: big_vision's tokenize(pad_value=1), OpenCLIP 3.x's SigLipTokenizer
  // (pad_token_id = 1), google/siglip-*'s tokenizer_config.json (pad_token "</s>"); else
  // its "<pad>" piece; else 0.
  int32_t pad_id() const;
  // Appended after the text: spiece.model its eos piece ("</s>" = 1 in T5; none if the model
  // has no eos), tokenizer.json its post_processor's special tokens after $A. Prefix: before.
  const std::vector<int32_t>& suffix_ids() const;
  const std::vector<int32_t>& prefix_ids() const;

  // The model's ids for `text` as its file's library encodes it: no cleaning, no special tokens
  // added. Invalid UTF-8 is an error "invalid UTF-8 at byte offset K (bytes ..)".
  Result<std::vector<int32_t>> encode(std::string_view text) const;
  // One row of n = row.size() ids, OpenCLIP's HFTokenizer: clean, encode, keep the first
  // n - |prefix| - |suffix| ids, prefix + ids + suffix, padded with pad_id(). Invalid UTF-8 is
  // an error and leaves the row all zeros; n smaller than the special tokens is an error.
  Status tokenize(std::string_view text, std::span<int32_t> row) const;
  // [N, context_length] row-major; a text that fails gets the empty text's row and its index
  // goes to `bad` (if non-null). Thread-safe; uses OpenMP.
  std::vector<int32_t> tokenize_batch(std::span<const std::string> texts, int context_length,
                                      std::vector<size_t>* bad = nullptr) const;
  // Ids back to text: pieces joined, padding and special tokens dropped, "▁" -> " ", the
  // leading space removed. Not sentencepiece's full Decode (byte pieces are left as "<0xXX>").
  std::string decode(std::span<const int32_t> ids) const;

 private:
  struct Impl;
  friend void apply_tokenizer_config(Impl& m, const std::string& tokenizer_json_path);
  explicit SentencePieceTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc
