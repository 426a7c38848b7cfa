// OpenCLIP's SimpleTokenizer (CLIP byte-level BPE), exactly: same cleaning, same
// pre-tokenization classes, same merges, same special tokens, truncation and padding.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace oc {

inline constexpr int32_t kSotToken = 49406;  // <start_of_text>
inline constexpr int32_t kEotToken = 49407;  // <end_of_text>
inline constexpr int kDefaultContextLength = 77;

class Tokenizer {
 public:
  // Loads bpe_simple_vocab_16e6.txt.gz (or an uncompressed copy). Throws oc::Error that
  // says where it looked and how to get the file when it is missing or malformed.
  static Tokenizer load(const std::string& vocab_path);
  // Resolves the vocabulary: `explicit_path` if non-empty, then $OPENCLIP_VOCAB, then the
  // install's data folder (core/machine.h data_dirs()).
  static Tokenizer load_default(const std::string& explicit_path = "");
  static std::string find_vocab(const std::string& explicit_path = "");

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  int32_t vocab_size() const;  // 49408

  // BPE ids of the cleaned text, without start/end tokens. Invalid UTF-8 is an error.
  Result<std::vector<int32_t>> encode(std::string_view text) const;
  // [sot] + encode(text) + [eot], truncated to context_length with the last id forced to
  // eot, zero-padded: writes exactly context_length ids to `out`. Invalid UTF-8 is an error
  // (out is then left all zeros).
  Status tokenize(std::string_view text, std::span<int32_t> out) const;
  // Many texts, [N, context_length] row-major. Rows that fail are left as [sot, eot, 0...]
  // and their indices reported in `bad` (if non-null). Thread-safe; uses OpenMP.
  std::vector<int32_t> tokenize_batch(std::span<const std::string> texts, int context_length,
                                      std::vector<size_t>* bad = nullptr) const;
  // Ids back to text (start/end tokens and padding 0 after eot dropped; "</w>" -> space).
  std::string decode(std::span<const int32_t> ids) const;

 private:
  struct Impl;
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc
