// The text tokenizer a model config selects, as OpenCLIP 2.24's get_tokenizer does: CLIP's
// byte-level BPE (SimpleTokenizer) by default, Hugging Face's WordPiece when text_cfg has
// "hf_tokenizer_name": "bert-base-uncased" (the -CLIPA configs), with tokenizer_kwargs
// strip_sep_token; SentencePiece (T5's unigram model, clean="canonicalize") for the SigLIP
// configs' "timm/...SigLIP..." names. Rows are always context_length ids.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace oc {

struct TextTokenizerSpec {
  std::string hf_tokenizer_name;  // text_cfg.hf_tokenizer_name; empty: CLIP's BPE
  bool strip_sep_token = false;   // text_cfg.tokenizer_kwargs.strip_sep_token (WordPiece only)
  int context_length = 77;        // text_cfg.context_length
  std::string vocab_path;         // BPE: --vocab; WordPiece, SentencePiece: --hf-tokenizer-vocab; empty: search
  std::string clean;              // text_cfg.tokenizer_kwargs.clean; empty: the tokenizer's default
  std::string vocab_flag = "--hf-tokenizer-vocab";  // the flag errors name for vocab_path ("" = the
                                                    // command takes none: errors say where files are read)
};

// The end of a "vocabulary not found" message: how to give the file with `flag`, or where a
// command without one finds it ("" flag).
std::string vocab_flag_advice(const std::string& flag);

// True for the hf_tokenizer_name values of OpenCLIP 2.24's SigLIP configs ("timm/...SigLIP..."),
// whose tokenizer is T5's SentencePiece unigram model (text/sentencepiece.h).
bool is_sentencepiece_tokenizer_name(const std::string& hf_tokenizer_name);

// The spec from an OpenCLIP model config (the whole JSON text): text_cfg.context_length,
// hf_tokenizer_name, tokenizer_kwargs. `source` names the config in errors. Throws oc::Error
// for a tokenizer_kwargs key OpenCLIP's tokenizer would reject or this one does not implement.
TextTokenizerSpec text_tokenizer_spec_from_config(const std::string& json_text, const std::string& source);

class TextTokenizer {
 public:
  virtual ~TextTokenizer() = default;
  virtual std::string name() const = 0;  // "clip-bpe" or the Hugging Face name
  virtual int32_t vocab_size() const = 0;
  // One past the largest id tokenize can write (a tokenizer.json's added tokens may lie past
  // its vocabulary); model_tokenizer checks it against the model's vocab_size at load.
  virtual int32_t id_limit() const { return vocab_size(); }
  int context_length() const { return context_length_; }
  // One row of row.size() ids (normally context_length()). Invalid UTF-8 is an error and
  // leaves the row all zeros.
  virtual Status tokenize(std::string_view text, std::span<int32_t> row) const = 0;
  // [N, context_length] row-major. A text that fails gets the row of the empty text and its
  // index goes to `bad` (if non-null). Thread-safe; uses OpenMP.
  std::vector<int32_t> tokenize_batch(std::span<const std::string> texts, std::vector<size_t>* bad = nullptr) const;
  // Ids back to text (special tokens and padding dropped).
  virtual std::string decode(std::span<const int32_t> ids) const = 0;

 protected:
  explicit TextTokenizer(int context_length) : context_length_(context_length) {}

 private:
  int context_length_;
};

// Loads the tokenizer `spec` asks for (the vocabulary found as Tokenizer::find_vocab or
// WordPieceTokenizer::find_vocab do). Throws oc::Error for an unsupported hf_tokenizer_name,
// strip_sep_token without one, a context length too small, or a missing vocabulary.
std::unique_ptr<TextTokenizer> make_text_tokenizer(const TextTokenizerSpec& spec);
inline std::unique_ptr<TextTokenizer> make_text_tokenizer(const std::string& hf_tokenizer_name, bool strip_sep_token,
                                                          int context_length, const std::string& vocab_path = "") {
  return make_text_tokenizer(TextTokenizerSpec{hf_tokenizer_name, strip_sep_token, context_length, vocab_path});
}

}  // namespace oc
