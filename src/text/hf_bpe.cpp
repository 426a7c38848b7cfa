// The BPE model of a tokenizer.json (Gemma's, which SigLIP2 uses: byte_fallback, fuse_unk, no
// pre-tokenizer, so one pre-token is the whole normalized text), as `tokenizers` 0.19 runs it.
// Transcribed from tokenizers' models/bpe/{model.rs (merge_word, tokenize), word.rs (merge_all)}:
//  - each character that is a piece is a symbol; else, with byte_fallback, its UTF-8 bytes as
//    "<0xXX>" pieces; else the unk piece (a run of them fused into one with fuse_unk);
//  - then merges by rank, lowest first (the leftmost of equal rank), each pair found in the
//    merges table replaced by its merged piece, until no adjacent pair has a merge.
// Built: dropout null, no continuing_subword_prefix / end_of_word_suffix, ignore_merges. A
// file asking for anything else is refused at load naming the key.
#include <fmt/format.h>

#include <array>
#include <queue>
#include <unordered_map>

#include "core/check.h"
#include "core/json_read.h"
#include "text/hf_model.h"
#include "text/unicode.h"
#include "text/unigram_trie.h"

namespace oc::text {
namespace {

using json = nlohmann::json;

class BpeModel final : public HfModel {
 public:
  BpeModel(const json& m, const std::string& source);
  int32_t vocab_size() const override { return int32_t(pieces_.size()); }
  int32_t unk_id() const override { return unk_; }
  int32_t piece_id(std::string_view piece) const override { return trie_.find(piece); }
  const std::string& piece(int32_t id) const override { return pieces_.at(size_t(id)); }
  void encode(std::string_view word, std::vector<int32_t>& ids) const override;

 private:
  struct Merge {
    int32_t rank, new_id;
  };
  static uint64_t key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
  void read_vocab(const json& v, const std::string& source);
  void read_merges(const json& list, const std::string& source);
  void read_options(const json& m, const std::string& source);
  void merge_all(std::vector<int32_t>& symbols) const;

  std::vector<std::string> pieces_;  // by id
  UnigramTrie trie_;                 // piece -> id
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t unk_ = -1;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::array<int32_t, 256> byte_ids_{};  // "<0xXX>" pieces (byte_fallback)
};

BpeModel::BpeModel(const json& m, const std::string& source) {
  for (const auto& [k, v] : m.items())
    if (k != "type" && k != "dropout" && k != "unk_token" && k != "continuing_subword_prefix" &&
        k != "end_of_word_suffix" && k != "fuse_unk" && k != "byte_fallback" && k != "ignore_merges" && k != "vocab" &&
        k != "merges")
      OC_USER_ERROR("{}: model.{} is not a BPE option openclip-cpp knows (see src/text/hf_bpe.cpp)", source, k);
  read_vocab(m.at("vocab"), source);
  read_options(m, source);
  read_merges(m.at("merges"), source);
}

void BpeModel::read_vocab(const json& v, const std::string& source) {
  if (!v.is_object() || v.empty()) OC_USER_ERROR("{}: model.vocab is not a non-empty object {{piece: id}}", source);
  if (v.size() > size_t(INT32_MAX)) OC_USER_ERROR("{}: model.vocab is too large", source);
  pieces_.resize(v.size());
  std::vector<bool> seen(v.size(), false);
  for (const auto& [piece, id_json] : v.items()) {
    const int32_t id = json_int<int32_t>(id_json, source, "model.vocab[\"" + piece.substr(0, 64) + "\"]");
    if (id < 0 || size_t(id) >= v.size() || seen[size_t(id)])
      OC_USER_ERROR("{}: model.vocab[\"{}\"] = {}: the ids must be 0 .. {} without repeats", source,
                    piece.substr(0, 64), id, v.size() - 1);
    if (size_t bad = utf8_invalid_offset(piece); bad != std::string::npos)
      OC_USER_ERROR("{}: model.vocab piece {}: {}", source, id, utf8_error_message(piece, bad));
    seen[size_t(id)] = true;
    pieces_[size_t(id)] = piece;
  }
  trie_.build(pieces_);
}

void BpeModel::read_options(const json& m, const std::string& source) {
  auto absent = [&](const char* k) { return !m.contains(k) || m[k].is_null() || m[k] == ""; };
  if (!absent("dropout") && m["dropout"] != 0.0)
    OC_USER_ERROR("{}: model.dropout {} is not supported (BPE dropout is for training; null is built)", source,
                  m["dropout"].dump());
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!absent(k))
      OC_USER_ERROR("{}: model.{} {} is not supported (Gemma's BPE has none)", source, k, m[k].dump().substr(0, 64));
  for (auto [k, out] : {std::pair{"fuse_unk", &fuse_unk_}, std::pair{"byte_fallback", &byte_fallback_},
                        std::pair{"ignore_merges", &ignore_merges_}}) {
    if (absent(k)) continue;
    if (!m[k].is_boolean()) OC_USER_ERROR("{}: model.{} must be true or false, got {}", source, k, m[k].dump());
    *out = m[k].get<bool>();
  }
  if (!absent("unk_token")) {
    if (!m["unk_token"].is_string()) OC_USER_ERROR("{}: model.unk_token must be a string", source);
    unk_ = trie_.find(m["unk_token"].get<std::string>());
    if (unk_ < 0) OC_USER_ERROR("{}: model.unk_token {} is not in model.vocab", source, m["unk_token"].dump());
  }
  if (!byte_fallback_) return;
  for (int b = 0; b < 256; ++b) {
    const std::string p = fmt::format("<0x{:02X}>", b);
    byte_ids_[size_t(b)] = trie_.find(p);
    if (byte_ids_[size_t(b)] < 0)
      OC_USER_ERROR(
          "{}: model.byte_fallback is true but model.vocab has no piece \"{}\" (byte fallback needs all 256 "
          "<0x00> .. <0xFF>)",
          source, p);
  }
}

// merges: ["a b", ...] (tokenizers before 0.20) or [["a", "b"], ...]; rank = index, a later
// duplicate pair wins (tokenizers collects them into a HashMap).
void BpeModel::read_merges(const json& list, const std::string& source) {
  if (!list.is_array()) OC_USER_ERROR("{}: model.merges is not an array", source);
  merges_.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const json& e = list[i];
    std::string a, b;
    if (e.is_string()) {
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        OC_USER_ERROR("{}: model.merges[{}] \"{}\" is not two pieces separated by one space", source, i,
                      s.substr(0, 64));
      a = s.substr(0, sp), b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>(), b = e[1].get<std::string>();
    } else {
      OC_USER_ERROR("{}: model.merges[{}] is not \"a b\" nor [\"a\", \"b\"]: {}", source, i, e.dump().substr(0, 64));
    }
    const int32_t ia = trie_.find(a), ib = trie_.find(b), ab = trie_.find(a + b);
    for (auto [id, p] : {std::pair{ia, &a}, std::pair{ib, &b}, std::pair{ab, (std::string*)nullptr}})
      if (id < 0)
        OC_USER_ERROR("{}: model.merges[{}]: \"{}\" is not in model.vocab", source, i, p ? p->substr(0, 64) : a + b);
    if (i > size_t(INT32_MAX)) OC_USER_ERROR("{}: model.merges is too large", source);
    merges_[key(ia, ib)] = Merge{int32_t(i), ab};
  }
}

// word.rs Word::merge_all without dropout: a min-heap on (rank, position); an entry whose pair
// has changed since it was pushed is skipped.
void BpeModel::merge_all(std::vector<int32_t>& ids) const {
  const int64_t n = int64_t(ids.size());
  std::vector<int64_t> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  std::vector<bool> gone(size_t(n), false);
  for (int64_t i = 0; i < n; ++i) prev[size_t(i)] = i - 1, next[size_t(i)] = i + 1 < n ? i + 1 : -1;
  struct Entry {
    int32_t rank;
    int64_t pos;
    int32_t new_id;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  auto push = [&](int64_t pos, int64_t right) {
    auto it = merges_.find(key(ids[size_t(pos)], ids[size_t(right)]));
    if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
  };
  for (int64_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!queue.empty()) {
    const Entry top = queue.top();
    queue.pop();
    const size_t p = size_t(top.pos);
    if (gone[p] || next[p] < 0) continue;
    const size_t r = size_t(next[p]);
    auto it = merges_.find(key(ids[p], ids[r]));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // expired
    ids[p] = top.new_id;
    gone[r] = true;
    next[p] = next[r];
    if (next[r] >= 0) prev[size_t(next[r])] = top.pos;
    if (prev[p] >= 0) push(prev[p], top.pos);
    if (next[p] >= 0) push(top.pos, next[p]);
  }
  size_t w = 0;
  for (size_t i = 0; i < size_t(n); ++i)
    if (!gone[i]) ids[w++] = ids[i];
  ids.resize(w);
}

void BpeModel::encode(std::string_view word, std::vector<int32_t>& ids) const {
  if (ignore_merges_)
    if (int32_t id = trie_.find(word); id >= 0) return ids.push_back(id);
  std::vector<int32_t> symbols;
  bool pending_unk = false;  // model.rs keeps the unk run aside until the next known piece
  for (size_t i = 0; i < word.size();) {
    size_t end = i;
    utf8_next(word.data(), end);
    const std::string_view ch = word.substr(i, end - i);
    i = end;
    if (const int32_t id = trie_.find(ch); id >= 0) {
      if (pending_unk) symbols.push_back(unk_), pending_unk = false;
      symbols.push_back(id);
      continue;
    }
    if (byte_fallback_) {  // every byte piece exists (checked at load); a pending unk stays pending, as model.rs
      for (unsigned char c : ch) symbols.push_back(byte_ids_[c]);
      continue;
    }
    if (unk_ < 0) continue;  // no unk_token: the character is dropped, as model.rs
    if (pending_unk && !fuse_unk_) symbols.push_back(unk_);
    pending_unk = true;
  }
  if (pending_unk) symbols.push_back(unk_);
  merge_all(symbols);
  ids.insert(ids.end(), symbols.begin(), symbols.end());
}

}  // namespace

std::unique_ptr<HfModel> read_bpe_model(const json& m, const std::string& source) {
  return std::make_unique<BpeModel>(m, source);
}

}  // namespace oc::text
