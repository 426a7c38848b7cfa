// A SentencePiece model file (spiece.model: the ModelProto protobuf) run by Google's own
// library, libsentencepiece (Debian's libsentencepiece-dev): normalization (the model's
// precompiled charsmap, whitespace handling) and the unigram Viterbi exactly as the
// `sentencepiece` package. Before the library sees the bytes, the protobuf framing is walked
// here so that a truncated or foreign file gets an error with its byte offset.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace oc::text {

class SpmModel {
 public:
  // `bytes` is the file's content, `source` its name for errors. Throws oc::Error: not a
  // protobuf / truncated (with the byte offset), no pieces, not a unigram model, or the
  // library's refusal.
  SpmModel(std::string_view bytes, const std::string& source);
  SpmModel(SpmModel&&) noexcept;
  SpmModel& operator=(SpmModel&&) noexcept;
  ~SpmModel();

  int32_t vocab_size() const;
  int32_t unk_id() const;
  int32_t eos_id() const;  // -1 when the model has none
  int32_t pad_id() const;  // -1 when the model has none
  const std::string& piece(int32_t id) const;
  bool is_control(int32_t id) const;

  // sentencepiece's encode(text) (out_type=int) of valid UTF-8 `text`. Thread-safe.
  void encode(std::string_view text, std::vector<int32_t>& ids) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace oc::text
