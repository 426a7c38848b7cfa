// The model of a Hugging Face tokenizer.json (hf_tokenizer_json.h runs the steps around it):
// the ids of one pre-token, as the `tokenizers` library's model of that "type" gives them.
// Built: Unigram (T5, mT5: hf_unigram.cpp) and BPE with byte_fallback (Gemma: hf_bpe.cpp).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace oc::text {

class HfModel {
 public:
  virtual ~HfModel() = default;
  virtual int32_t vocab_size() const = 0;
  virtual int32_t unk_id() const = 0;  // -1: the model has none
  // The id of `piece` in the vocabulary, or -1.
  virtual int32_t piece_id(std::string_view piece) const = 0;
  virtual const std::string& piece(int32_t id) const = 0;
  // Appends the ids of one pre-token (valid UTF-8, non-empty) to `ids`. Thread-safe.
  virtual void encode(std::string_view pre_token, std::vector<int32_t>& ids) const = 0;
};

// The "model" object of a tokenizer.json; `source` names the file in errors (oc::Error with the
// JSON path of what is missing, malformed or unsupported).
std::unique_ptr<HfModel> read_unigram_model(const nlohmann::json& m, const std::string& source);
std::unique_ptr<HfModel> read_bpe_model(const nlohmann::json& m, const std::string& source);

}  // namespace oc::text
