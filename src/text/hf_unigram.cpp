// The Unigram model of a tokenizer.json (T5, SigLIP, mT5), as `tokenizers` 0.19 runs it:
// Viterbi over the pieces' scores in double precision. Transcribed from tokenizers'
// models/unigram/model.rs (encode_optimized, tokenize); the steps around it are
// hf_tokenizer_json.cpp's.
#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"
#include "core/json_read.h"
#include "text/hf_model.h"
#include "text/unicode.h"
#include "text/unigram_trie.h"

namespace oc::text {
namespace {

using json = nlohmann::json;
constexpr double kUnkPenalty = 10.0;  // tokenizers' K_UNK_PENALTY (sentencepiece's kUnkPenalty)

class UnigramModel final : public HfModel {
 public:
  UnigramModel(const json& m, const std::string& source);
  int32_t vocab_size() const override { return int32_t(pieces.size()); }
  int32_t unk_id() const override { return unk; }
  int32_t piece_id(std::string_view piece) const override { return trie.find(piece); }
  const std::string& piece(int32_t id) const override { return pieces.at(size_t(id)); }
  void encode(std::string_view s, std::vector<int32_t>& ids) const override;

 private:
  std::vector<std::string> pieces;
  std::vector<double> scores;
  UnigramTrie trie;
  int32_t unk = -1;
  bool byte_fallback = false;
  double min_score = 0;
};

UnigramModel::UnigramModel(const json& m, const std::string& source) {
  const json& vocab = m.at("vocab");
  if (!vocab.is_array() || vocab.empty()) OC_USER_ERROR("{}: model.vocab is not a non-empty array", source);
  for (size_t i = 0; i < vocab.size(); i++) {
    const json& e = vocab[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      OC_USER_ERROR("{}: model.vocab[{}] is not [piece, score]", source, i);
    pieces.push_back(e[0].get<std::string>());
    if (size_t bad = utf8_invalid_offset(pieces.back()); bad != std::string::npos)
      OC_USER_ERROR("{}: model.vocab[{}]: {}", source, i, utf8_error_message(pieces.back(), bad));
    scores.push_back(e[1].get<double>());
  }
  if (vocab.size() > size_t(INT32_MAX)) OC_USER_ERROR("{}: model.vocab is too large", source);
  if (!m.contains("unk_id") || m["unk_id"].is_null())
    OC_USER_ERROR("{}: model.unk_id is missing (tokenizers needs it for unknown characters)", source);
  unk = json_int<int32_t>(m["unk_id"], source, "model.unk_id");  // 2^32 + 2 is refused, not read as 2
  if (unk < 0 || size_t(unk) >= pieces.size()) OC_USER_ERROR("{}: model.unk_id {} is not a vocabulary id", source, unk);
  byte_fallback = m.value("byte_fallback", false);
  min_score = *std::min_element(scores.begin(), scores.end());  // over the whole vocabulary, as Unigram::from
  trie.build(pieces);
}

// tokenizers' Unigram::encode_optimized + tokenize: best path by summed scores (f64; ties keep
// the first candidate, shortest piece first, the unknown-character candidate last), runs of
// unknown characters fused into one string, then looked up: a piece, its <0xXX> bytes under
// byte_fallback, or unk_id.
void UnigramModel::encode(std::string_view s, std::vector<int32_t>& ids) const {
  struct Best {
    int32_t id = -1;
    double score = 0;
    int64_t start = -1;
  };
  std::vector<Best> best(s.size() + 1);
  const double unk_score = min_score - kUnkPenalty;
  for (size_t at = 0; at < s.size();) {
    size_t k = at;
    utf8_next(s.data(), k);
    const size_t char_len = k - at;
    const double here = best[at].score;
    bool single = false;
    trie.prefixes(s.substr(at), [&](size_t len, int32_t id) {
      Best& b = best[at + len];
      double cand = scores[size_t(id)] + here;
      if (b.start < 0 || cand > b.score) b = {id, cand, int64_t(at)};
      single |= len == char_len;
    });
    if (!single) {
      Best& b = best[at + char_len];
      double cand = unk_score + here;
      if (b.start < 0 || cand > b.score) b = {unk, cand, int64_t(at)};
    }
    at = k;
  }
  struct Span {
    size_t start, end;
    bool unk;
  };
  std::vector<Span> spans;  // backwards
  for (size_t end = s.size(); end > 0;) {
    const Best& b = best[end];
    size_t start = size_t(b.start);
    if (b.id == unk && !spans.empty() && spans.back().unk)
      spans.back().start = start;  // fused with the unknown run after it
    else
      spans.push_back({start, end, b.id == unk});
    end = start;
  }
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    std::string_view tok = s.substr(it->start, it->end - it->start);
    int32_t id = trie.find(tok);
    if (id >= 0) {
      ids.push_back(id);
      continue;
    }
    if (byte_fallback) {
      size_t n0 = ids.size();
      bool all = true;
      for (unsigned char c : tok) {
        int32_t bid = trie.find(fmt::format("<0x{:02X}>", c));
        if (bid < 0) {
          all = false;
          break;
        }
        ids.push_back(bid);
      }
      if (all) continue;
      ids.resize(n0);
    }
    ids.push_back(unk);
  }
}

}  // namespace

std::unique_ptr<HfModel> read_unigram_model(const json& m, const std::string& source) {
  return std::make_unique<UnigramModel>(m, source);
}

}  // namespace oc::text
