// Hugging Face's BertTokenizerFast for bert-base-uncased, as OpenCLIP 2.24's HFTokenizer runs
// it for the "-CLIPA" model configs (text_cfg "hf_tokenizer_name": "bert-base-uncased"):
// clean="whitespace" (ftfy, html.unescape twice, whitespace collapsed, no lower()), then the
// `tokenizers` pipeline of bert-base-uncased: special tokens ([CLS], [SEP], [UNK], [PAD],
// [MASK]) matched in the text, BertNormalizer (clean_text, spaces around CJK ideographs, NFD
// without Mn marks, per-character lower case), BertPreTokenizer (split on whitespace, each
// punctuation character a word), WordPiece (greedy longest match, "##" continuations, a word
// over 100 characters or with no full match -> [UNK]), [CLS] ... [SEP], truncated and padded
// to max_length with [PAD]; strip_sep_token turns every [SEP] id into 0. See docs/TOKENIZER.md.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace oc {

class WordPieceTokenizer {
 public:
  static constexpr int kMaxInputCharsPerWord = 100;

  // Reads a WordPiece vocab.txt: one token per line, id = line index (from 0), trailing
  // whitespace of a line ignored, a later duplicate wins (as tokenizers' WordPiece::read_file).
  // [CLS], [SEP], [UNK] and [PAD] must be present. Throws oc::Error naming file and line.
  static WordPieceTokenizer load(const std::string& vocab_path);
  // Resolves the vocabulary of Hugging Face tokenizer `hf_name` (the config's
  // hf_tokenizer_name): `explicit_path` if non-empty (--hf-tokenizer-vocab), then
  // $OPENCLIP_HF_TOKENIZER_VOCAB, then in each data folder (core/machine.h data_dirs())
  // `<hf_name>-vocab.txt` and `<hf_name>/vocab.txt`. Missing: an error naming the key, the
  // file expected and every place searched.
  static std::string find_vocab(const std::string& hf_name, const std::string& explicit_path = "",
                                const std::string& flag = "--hf-tokenizer-vocab");

  WordPieceTokenizer(WordPieceTokenizer&&) noexcept;
  WordPieceTokenizer& operator=(WordPieceTokenizer&&) noexcept;
  ~WordPieceTokenizer();

  int32_t vocab_size() const;  // lines in vocab.txt (30522 for bert-base-uncased)
  int32_t cls_id() const;
  int32_t sep_id() const;
  int32_t pad_id() const;
  int32_t unk_id() const;

  // WordPiece ids of the cleaned text, without [CLS]/[SEP]. Invalid UTF-8 is an error.
  Result<std::vector<int32_t>> encode(std::string_view text) const;
  // [CLS] + encode(text)[: n - 2] + [SEP], padded with [PAD] to n = out.size() >= 2; with
  // strip_sep_token every [SEP] id (also one written in the text) becomes 0. Invalid UTF-8 is
  // an error and leaves `out` all zeros.
  Status tokenize(std::string_view text, std::span<int32_t> out, bool strip_sep_token) const;
  // Ids -> text: [CLS], [SEP], [PAD] dropped, pieces joined by spaces, "##" continuations
  // glued to the piece before. Not HF's decode (no clean-up of spaces around punctuation).
  std::string decode(std::span<const int32_t> ids) const;

 private:
  struct Impl;
  explicit WordPieceTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

namespace text {
// BertNormalizer + BertPreTokenizer of bert-base-uncased on text without special tokens: the
// words WordPiece sees, as UTF-8. `text` must be valid UTF-8. Exposed for tests.
void bert_pre_tokenize(std::string_view text, std::vector<std::string>& words);
}  // namespace text

}  // namespace oc
