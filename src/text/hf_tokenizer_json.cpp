// Written here rather than taken from a library: Hugging Face's `tokenizers` is Rust (no C++
// API, not packaged in Debian), and libsentencepiece cannot run a tokenizer.json: its pipeline
// (added tokens, per-grapheme Precompiled, WhitespaceSplit, Metaspace, Viterbi in double
// precision) differs from sentencepiece's own in the corner cases the tests cover. Transcribed
// from tokenizers 0.19: normalizers/{precompiled,replace,strip,prepend}.rs,
// pre_tokenizers/{whitespace,metaspace}.rs, processors/template.rs, added_vocabulary.rs; the
// models are hf_unigram.cpp and hf_bpe.cpp.
#include "text/hf_tokenizer_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_read.h"
#include "text/hf_model.h"
#include "text/precompiled_charsmap.h"
#include "text/unicode.h"
#include "text/unicode_tables.h"

namespace oc::text {
namespace {

using json = nlohmann::json;

// Bounds on what a tokenizer.json may make of one text (a file that grows every text without
// limit is refused, at load or for that text, instead of taking the process's memory):
//  - each literal a normalizer inserts or matches (Replace pattern and content, Prepend) has
//    at most kMaxLiteral bytes; T5, mT5 and SigLIP files use 1-3 ("▁", " ");
//  - a Metaspace replacement is one character, as tokenizers' Metaspace holds a Rust char;
//  - at most kMaxSteps normalizers and pre-tokenizers each (the files above have 1-4);
//  - a text's normalized and pre-tokenized bytes stay under kMaxGrowth x its bytes +
//    kGrowthSlack. NFKC's largest growth is 11x in bytes (U+FDFA, 3 bytes -> 33), and
//    Metaspace then turns each of that output's 3 spaces (1 byte) into "▁" (3 bytes): 13x; 16x
//    leaves a margin. The slack covers Prepend and Metaspace's prefix on short texts.
constexpr size_t kMaxLiteral = 64;
constexpr size_t kMaxSteps = 64;
constexpr size_t kMaxGrowth = 16;
constexpr size_t kGrowthSlack = 4096;

// Rust's char::is_whitespace (White_Space), as the WordPiece tables hold it (kBertSpace: \t \n \r
// or White_Space, the same set).
bool is_white_space(uint32_t c) { return c < 0x110000 && (tables::bert_props(c) & tables::kBertSpace); }

// Strict RFC 4648 base64 (with padding), as serde's Vec<u8> deserializer in tokenizers reads
// precompiled_charsmap. (serve/base64_decode.h is in a layer above text.)
bool base64_decode(std::string_view in, std::string& out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  if (in.size() % 4 != 0) return false;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4], pad = 0;
    for (int k = 0; k < 4; k++) {
      char c = in[i + k];
      bool last = i + 4 == in.size();
      if (c == '=' && last && k >= 2 && (k == 3 || in[i + 3] == '=')) {
        v[k] = 0;
        pad++;
      } else if ((v[k] = val(c)) < 0) {
        return false;
      }
    }
    uint32_t w = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out.push_back(char(w >> 16));
    if (pad < 2) out.push_back(char((w >> 8) & 0xFF));
    if (pad < 1) out.push_back(char(w & 0xFF));
  }
  return true;
}

enum class NormKind { Precompiled, Replace, ReplaceRun, Strip, Prepend };
struct NormStep {
  NormKind kind;
  std::string pattern, content;      // Replace: literal -> content; ReplaceRun: run of pattern[0]; Prepend: content
  size_t min_run = 0;                // ReplaceRun: runs of at least this many pattern[0] bytes
  bool left = false, right = false;  // Strip
  PrecompiledCharsmap charsmap;
};

enum class Prepend { Always, First, Never };
enum class PreKind { WhitespaceSplit, Metaspace };
struct PreStep {
  PreKind kind;
  std::string replacement;
  Prepend prepend = Prepend::Always;
  bool split = true;
};

struct PreToken {
  std::string text;
  bool at_start;  // begins at the start of the input (Metaspace prepend_scheme "first")
};

struct AddedToken {
  std::string content;
  int32_t id;
};

[[noreturn]] void unsupported(const std::string& source, const std::string& where, const json& j) {
  OC_USER_ERROR("{}: {} {} is not supported (supported: see src/text/hf_tokenizer_json.h)", source, where,
                j.dump().substr(0, 200));
}

// A literal of the normalizer at `where` (`key`): at most kMaxLiteral bytes of valid UTF-8.
std::string read_literal(const json& n, const char* key, const std::string& source, const std::string& where) {
  const json& v = n.at(key);
  if (!v.is_string()) OC_USER_ERROR("{}: {}.{} must be a string, got {}", source, where, key, v.dump().substr(0, 100));
  std::string s = v.get<std::string>();
  if (s.size() > kMaxLiteral)
    OC_USER_ERROR(
        "{}: {}.{} has {} bytes, over the cap of {} on a normalizer's literals (a text would grow by it "
        "at each match)",
        source, where, key, s.size(), kMaxLiteral);
  if (size_t bad = utf8_invalid_offset(s); bad != std::string::npos)
    OC_USER_ERROR("{}: {}.{}: {}", source, where, key, utf8_error_message(s, bad));
  return s;
}

}  // namespace

struct HfTokenizerJson::Impl {
  std::string source;
  std::unique_ptr<HfModel> model;
  std::vector<NormStep> norm;
  std::vector<PreStep> pre;
  std::vector<AddedToken> added;        // longest first
  std::array<bool, 256> added_first{};  // bytes an added token starts with
  std::vector<int32_t> prefix, suffix;
  std::string metaspace;

  void read_model(const json& m);
  void read_special_tokens(const json& added_tokens, std::map<std::string, int32_t>& special);
  void read_normalizer(const json& n, const std::string& where);
  void read_normalizer_step(const json& n, const std::string& type, const std::string& where);
  void read_pre_tokenizer(const json& p, const std::string& where);
  void read_post_processor(const json& p, const std::map<std::string, int32_t>& special);
  Status normalize(std::string_view in, std::string& out) const;
  Status pre_tokenize(std::vector<PreToken>& toks, size_t in_bytes) const;
};

void HfTokenizerJson::Impl::read_model(const json& m) {
  const std::string type = m.is_object() ? m.value("type", "") : "";
  if (type == "Unigram")
    model = read_unigram_model(m, source);
  else if (type == "BPE")
    model = read_bpe_model(m, source);
  else
    unsupported(source, "model", m.is_object() ? m.value("type", json()) : m);
}

void HfTokenizerJson::Impl::read_normalizer(const json& n, const std::string& where) {
  // Sequences recurse once per level: parse_json's depth cap bounds that.
  if (n.is_null()) return;
  std::string type = n.is_object() ? n.value("type", "") : "";
  if (type == "Sequence") {
    const json& list = n.at("normalizers");
    if (!list.is_array()) OC_USER_ERROR("{}: {}.normalizers is not an array", source, where);
    for (size_t i = 0; i < list.size(); i++) read_normalizer(list[i], fmt::format("{}.normalizers[{}]", where, i));
    return;
  }
  if (norm.size() == kMaxSteps)
    OC_USER_ERROR("{}: {}: more than {} normalizers (the cap on a tokenizer.json's steps)", source, where, kMaxSteps);
  read_normalizer_step(n, type, where);
}

void HfTokenizerJson::Impl::read_normalizer_step(const json& n, const std::string& type, const std::string& where) {
  NormStep s;
  if (type == "Precompiled") {
    s.kind = NormKind::Precompiled;
    std::string blob;
    const json& b64 = n.at("precompiled_charsmap");
    if (!b64.is_null() && !(b64.is_string() && base64_decode(b64.get<std::string>(), blob)))
      OC_USER_ERROR("{}: {}.precompiled_charsmap is not base64", source, where);
    s.charsmap = PrecompiledCharsmap(blob, source + ": " + where + ".precompiled_charsmap");
  } else if (type == "Replace") {
    const json& p = n.at("pattern");
    s.content = read_literal(n, "content", source, where);
    if (!p.is_object()) unsupported(source, where + ".pattern", p);
    if (p.contains("String")) {
      s.kind = NormKind::Replace;
      s.pattern = read_literal(p, "String", source, where + ".pattern");
      if (s.pattern.empty()) unsupported(source, where, n);
    } else {
      // Only a run of one ASCII character: "<c>{n,}" or "<c>+" (" {2,}" in T5's files).
      std::string re = p.contains("Regex") ? read_literal(p, "Regex", source, where + ".pattern") : "";
      s.kind = NormKind::ReplaceRun;
      s.pattern = re.substr(0, 1);
      bool plain = !re.empty() && uint8_t(re[0]) < 0x80 && !std::strchr("\\.^$|?*+()[]{}", re[0]);
      if (plain && re.size() == 2 && re[1] == '+') {
        s.min_run = 1;
      } else if (plain && re.size() >= 5 && re[1] == '{' && re.substr(re.size() - 2) == ",}" &&
                 re.size() <= 4 + 9 &&  // n < 10^9 (not std::stoi's bare "stoi" past 2^31)
                 std::all_of(re.begin() + 2, re.end() - 2, [](char c) { return c >= '0' && c <= '9'; })) {
        s.min_run = std::max<size_t>(1, std::stoul(re.substr(2, re.size() - 4)));
      } else {
        unsupported(source, where + ".pattern", p);
      }
    }
  } else if (type == "Strip") {
    s.kind = NormKind::Strip;
    s.left = n.value("strip_left", false);
    s.right = n.value("strip_right", false);
  } else if (type == "Prepend") {
    s.kind = NormKind::Prepend;
    s.content = read_literal(n, "prepend", source, where);
  } else {
    unsupported(source, where, n);
  }
  norm.push_back(std::move(s));
}

void HfTokenizerJson::Impl::read_pre_tokenizer(const json& p, const std::string& where) {
  if (p.is_null()) return;
  std::string type = p.is_object() ? p.value("type", "") : "";
  if (type == "Sequence") {
    const json& list = p.at("pretokenizers");
    if (!list.is_array()) OC_USER_ERROR("{}: {}.pretokenizers is not an array", source, where);
    for (size_t i = 0; i < list.size(); i++) read_pre_tokenizer(list[i], fmt::format("{}.pretokenizers[{}]", where, i));
    return;
  }
  if (pre.size() == kMaxSteps)
    OC_USER_ERROR("{}: {}: more than {} pre-tokenizers (the cap on a tokenizer.json's steps)", source, where,
                  kMaxSteps);
  PreStep s;
  if (type == "WhitespaceSplit") {
    s.kind = PreKind::WhitespaceSplit;
  } else if (type == "Metaspace") {
    s.kind = PreKind::Metaspace;
    s.replacement = read_literal(p, "replacement", source, where);
    size_t one = 0;
    if (!s.replacement.empty()) utf8_next(s.replacement.data(), one);
    if (s.replacement.empty() || one != s.replacement.size())
      OC_USER_ERROR("{}: {}.replacement must be one character (as in tokenizers), got \"{}\"", source, where,
                    s.replacement);
    if (p.contains("prepend_scheme")) {
      std::string scheme = p["prepend_scheme"].get<std::string>();
      if (scheme == "always")
        s.prepend = Prepend::Always;
      else if (scheme == "first")
        s.prepend = Prepend::First;
      else if (scheme == "never")
        s.prepend = Prepend::Never;
      else
        unsupported(source, where + ".prepend_scheme", p["prepend_scheme"]);
    } else {
      s.prepend = p.value("add_prefix_space", true) ? Prepend::Always : Prepend::Never;
    }
    s.split = p.value("split", true);
    metaspace = s.replacement;
  } else {
    unsupported(source, where, p);
  }
  pre.push_back(std::move(s));
}

void HfTokenizerJson::Impl::read_post_processor(const json& p, const std::map<std::string, int32_t>& special) {
  if (p.is_null()) return;
  if (!p.is_object() || p.value("type", "") != "TemplateProcessing") unsupported(source, "post_processor", p);
  bool seen_a = false;
  for (const json& item : p.at("single")) {
    if (item.contains("Sequence")) {
      if (item["Sequence"].value("id", "") != "A" || seen_a) unsupported(source, "post_processor.single", p["single"]);
      seen_a = true;
    } else if (item.contains("SpecialToken")) {
      std::string name = item["SpecialToken"].at("id").get<std::string>();
      const json& st = p.at("special_tokens");
      if (!st.contains(name)) OC_USER_ERROR("{}: post_processor.special_tokens has no \"{}\"", source, name);
      for (const json& id : st[name].at("ids")) {
        int32_t v = json_int<int32_t>(id, source, fmt::format("post_processor.special_tokens[\"{}\"].ids", name));
        if (v < 0 || (v >= model->vocab_size() && !special.count(name)))
          OC_USER_ERROR("{}: post_processor token \"{}\" id {} is not in the vocabulary", source, name, v);
        (seen_a ? suffix : prefix).push_back(v);
      }
    } else {
      unsupported(source, "post_processor.single", item);
    }
  }
  if (!seen_a) unsupported(source, "post_processor.single (no $A)", p["single"]);
}

HfTokenizerJson::HfTokenizerJson(std::string_view json_text, const std::string& source)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.source = source;
  json j = parse_json(json_text, source);
  if (!j.is_object() || !j.contains("model")) OC_USER_ERROR("{}: not a tokenizer.json (no \"model\" object)", source);
  try {
    m.read_model(j["model"]);
    m.read_normalizer(j.value("normalizer", json()), "normalizer");
    m.read_pre_tokenizer(j.value("pre_tokenizer", json()), "pre_tokenizer");
    std::map<std::string, int32_t> special;
    m.read_special_tokens(j.value("added_tokens", json::array()), special);
    m.read_post_processor(j.value("post_processor", json()), special);
  } catch (const json::exception& e) {
    OC_USER_ERROR("{}: malformed tokenizer.json: {}", source, e.what());
  }
}

void HfTokenizerJson::Impl::read_special_tokens(const json& added_tokens, std::map<std::string, int32_t>& special) {
  for (const json& t : added_tokens) {
    AddedToken a{t.at("content").get<std::string>(), json_int<int32_t>(t.at("id"), source, "added_tokens[].id")};
    if (a.content.empty() || a.id < 0) OC_USER_ERROR("{}: added_tokens entry {} is invalid", source, t.dump());
    special[a.content] = a.id;
    added_first[uint8_t(a.content[0])] = true;
    added.push_back(std::move(a));
  }
  std::stable_sort(added.begin(), added.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
}

HfTokenizerJson::HfTokenizerJson(HfTokenizerJson&&) noexcept = default;
HfTokenizerJson& HfTokenizerJson::operator=(HfTokenizerJson&&) noexcept = default;
HfTokenizerJson::~HfTokenizerJson() = default;

int32_t HfTokenizerJson::vocab_size() const { return impl_->model->vocab_size(); }
int32_t HfTokenizerJson::id_limit() const {
  int64_t end = vocab_size();
  for (const AddedToken& a : impl_->added) end = std::max(end, int64_t(a.id) + 1);
  for (const auto* v : {&impl_->prefix, &impl_->suffix})
    for (int32_t id : *v) end = std::max(end, int64_t(id) + 1);
  return int32_t(std::min<int64_t>(end, INT32_MAX));
}
int32_t HfTokenizerJson::unk_id() const { return impl_->model->unk_id(); }
int32_t HfTokenizerJson::piece_id(std::string_view piece) const { return impl_->model->piece_id(piece); }
const std::string& HfTokenizerJson::piece(int32_t id) const { return impl_->model->piece(id); }
const std::vector<int32_t>& HfTokenizerJson::prefix_ids() const { return impl_->prefix; }
const std::vector<int32_t>& HfTokenizerJson::suffix_ids() const { return impl_->suffix; }
const std::string& HfTokenizerJson::metaspace() const { return impl_->metaspace; }

}  // namespace oc::text

namespace oc::text {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to, std::string& tmp) {
  tmp.clear();
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, from.size(), from) == 0) {
      tmp.append(to);
      i += from.size();
    } else {
      tmp.push_back(s[i++]);
    }
  }
  s.swap(tmp);
}

void replace_runs(std::string& s, char c, size_t min_run, std::string_view to, std::string& tmp) {
  tmp.clear();
  for (size_t i = 0; i < s.size();) {
    size_t j = i;
    while (j < s.size() && s[j] == c) j++;
    if (j - i >= min_run) {
      tmp.append(to);
      i = j;
    } else if (j > i) {
      tmp.append(s, i, j - i);
      i = j;
    } else {
      tmp.push_back(s[i++]);
    }
  }
  s.swap(tmp);
}

void strip_white_space(std::string& s, bool left, bool right) {
  size_t b = 0, e = s.size();
  if (left)
    for (size_t i = 0; i < e;) {
      size_t k = i;
      if (!is_white_space(utf8_next(s.data(), k))) break;
      b = i = k;
    }
  if (right)
    while (e > b) {
      size_t start = e - 1;
      while (start > b && (uint8_t(s[start]) & 0xC0) == 0x80) start--;
      size_t k = start;
      if (!is_white_space(utf8_next(s.data(), k))) break;
      e = start;
    }
  s = s.substr(b, e - b);
}

void whitespace_split(std::vector<PreToken>& toks) {
  std::vector<PreToken> out;
  for (PreToken& t : toks) {
    size_t word = std::string::npos;
    bool first = t.at_start;
    for (size_t i = 0; i <= t.text.size();) {
      size_t k = i;
      bool space = i == t.text.size() || is_white_space(utf8_next(t.text.data(), k));
      if (space && word != std::string::npos) {
        out.push_back({t.text.substr(word, i - word), first && word == 0});
        word = std::string::npos;
      } else if (!space && word == std::string::npos) {
        word = i;
      }
      i = i == t.text.size() ? i + 1 : k;
    }
  }
  toks.swap(out);
}

}  // namespace

// The bytes a text of `in_bytes` may grow to (see kMaxGrowth).
size_t growth_cap(size_t in_bytes) { return kMaxGrowth * in_bytes + kGrowthSlack; }

Status too_much_growth(size_t in_bytes, size_t bytes, const char* stage) {
  return Err{fmt::format("the tokenizer's {} made {} bytes of a {}-byte text, over the cap of {} x its bytes + {}",
                         stage, bytes, in_bytes, kMaxGrowth, kGrowthSlack)};
}

Status HfTokenizerJson::Impl::normalize(std::string_view in, std::string& out) const {
  out.assign(in);
  std::string tmp;
  for (const NormStep& s : norm) {
    switch (s.kind) {
      case NormKind::Precompiled:
        tmp.clear();
        s.charsmap.normalize(out, tmp);
        out.swap(tmp);
        break;
      case NormKind::Replace:
        replace_all(out, s.pattern, s.content, tmp);
        break;
      case NormKind::ReplaceRun:
        replace_runs(out, s.pattern[0], s.min_run, s.content, tmp);
        break;
      case NormKind::Strip:
        strip_white_space(out, s.left, s.right);
        break;
      case NormKind::Prepend:
        if (!out.empty()) out.insert(0, s.content);
        break;
    }
    // Checked after each step, so that doubling steps stop at the cap, not at 2^26 x.
    if (out.size() > growth_cap(in.size())) return too_much_growth(in.size(), out.size(), "normalizer");
  }
  // The charsmap's replacements are checked at load; this keeps any other step's output that
  // is not UTF-8 from reaching code that decodes it.
  if (size_t bad = utf8_invalid_offset(out); bad != std::string::npos)
    return Err{"the tokenizer's normalizer made invalid UTF-8: " + utf8_error_message(out, bad)};
  return Status::success();
}

Status HfTokenizerJson::Impl::pre_tokenize(std::vector<PreToken>& toks, size_t in_bytes) const {
  std::string tmp;
  for (const PreStep& s : pre) {
    size_t bytes = 0;
    for (const PreToken& t : toks) bytes += t.text.size();
    if (bytes > growth_cap(in_bytes)) return too_much_growth(in_bytes, bytes, "pre-tokenizer");
    if (s.kind == PreKind::WhitespaceSplit) {
      whitespace_split(toks);
      continue;
    }
    std::vector<PreToken> out;
    for (PreToken& t : toks) {
      replace_all(t.text, " ", s.replacement, tmp);
      bool prepend = s.prepend == Prepend::Always || (s.prepend == Prepend::First && t.at_start);
      if (prepend && !t.text.empty() && t.text.compare(0, s.replacement.size(), s.replacement) != 0)
        t.text.insert(0, s.replacement);
      if (!s.split) {
        out.push_back(std::move(t));
        continue;
      }
      size_t start = 0;  // MergedWithNext: each replacement begins a new pre-token
      for (size_t i = 1; i <= t.text.size(); i++) {
        if (i == t.text.size() || t.text.compare(i, s.replacement.size(), s.replacement) == 0) {
          out.push_back({t.text.substr(start, i - start), t.at_start && start == 0});
          start = i;
        }
      }
    }
    toks.swap(out);
  }
  size_t bytes = 0;
  for (const PreToken& t : toks) bytes += t.text.size();
  if (bytes > growth_cap(in_bytes)) return too_much_growth(in_bytes, bytes, "pre-tokenizer");
  return Status::success();
}

Status HfTokenizerJson::encode(std::string_view text, std::vector<int32_t>& ids) const {
  const Impl& m = *impl_;
  ids.clear();
  std::string norm;
  std::vector<PreToken> toks;
  auto run = [&](std::string_view part, bool at_start) -> Status {
    if (part.empty()) return Status::success();
    if (Status st = m.normalize(part, norm); !st.ok()) return st;
    toks.assign(1, PreToken{norm, at_start});
    if (Status st = m.pre_tokenize(toks, part.size()); !st.ok()) return st;
    for (const PreToken& t : toks)
      if (!t.text.empty()) m.model->encode(t.text, ids);
    return Status::success();
  };
  // Added tokens are found in the raw text, leftmost-longest (tokenizers' AddedVocabulary with
  // normalized=false tokens, T5's <pad> </s> <unk> <extra_id_N>); the parts between them are
  // normalized and pre-tokenized on their own.
  size_t part = 0;
  for (size_t i = 0; i < text.size();) {
    const AddedToken* hit = nullptr;
    if (m.added_first[uint8_t(text[i])])
      for (const AddedToken& a : m.added)
        if (text.compare(i, a.content.size(), a.content) == 0) {
          hit = &a;
          break;
        }
    if (!hit) {
      i++;
      continue;
    }
    if (Status st = run(text.substr(part, i - part), part == 0); !st.ok()) return st;
    ids.push_back(hit->id);
    i += hit->content.size();
    part = i;
  }
  return run(text.substr(part), part == 0);
}

}  // namespace oc::text
