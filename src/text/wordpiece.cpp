// WordPiece tokenizer of bert-base-uncased (see wordpiece.h), written from the sources of
// Hugging Face `tokenizers` (normalizers/bert.rs, pre_tokenizers/bert.rs, models/wordpiece,
// the added-vocabulary split of special tokens, TemplateProcessing "[CLS] $A [SEP]") and
// OpenCLIP 2.24's HFTokenizer.
//
// Why no ICU (libicu-dev): the Unicode data this needs (NFD, general categories, lower-case
// mappings) is three small tables, two of which the CLIP tokenizer already has
// (unicode_tables.cpp); generating the BERT classes from Python's unicodedata the same way keeps
// both tokenizers on one Unicode version (14.0) and the binary free of a 30 MB dependency whose
// version (and so whose Unicode data) would vary between systems.
#include "text/wordpiece.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "core/check.h"
#include "core/fs.h"
#include "core/machine.h"
#include "text/clean.h"
#include "text/text_tokenizer.h"
#include "text/unicode.h"

namespace oc {
namespace {

namespace T = text::tables;

constexpr const char* kEnvVocab = "OPENCLIP_HF_TOKENIZER_VOCAB";
// The special tokens of bert-base-uncased's tokenizer.json ("added_tokens", all with
// normalized=false): matched verbatim in the cleaned text before normalization. All start
// with '[' (the scan below relies on it).
constexpr const char* kSpecialTokens[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};

// tokenizers' is_chinese_char (normalizers/bert.rs). Its fifth range starts at 0x2B920 where
// transformers' Python BertTokenizer has 0x2B820; OpenCLIP runs the Rust one.
bool is_cjk(uint32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct Scratch {
  std::string text, key;
  text::CleanScratch clean;
  std::vector<std::string> words;
  std::vector<int32_t> ids;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

// ASCII fast path of bert_pre_tokenize: per byte 0 = letter/digit kept (lower-cased),
// 1 = dropped control, 2 = whitespace, 3 = punctuation (a word of its own).
const std::array<uint8_t, 128>& ascii_class() {
  static const auto a = [] {
    std::array<uint8_t, 128> k{};
    for (int c = 0; c < 128; c++) {
      uint8_t p = T::bert_props(uint32_t(c));
      k[c] = (p & T::kBertRemoved) ? 1 : (p & T::kBertSpace) ? 2 : (p & T::kBertPunct) ? 3 : 0;
    }
    return k;
  }();
  return a;
}

void split_ascii(std::string_view s, std::vector<std::string>& words) {
  const auto& cls = ascii_class();
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur)), cur.clear();
  };
  for (char ch : s) {
    uint8_t c = uint8_t(ch);
    switch (cls[c]) {
      case 0:
        cur.push_back(char(c >= 'A' && c <= 'Z' ? c + 32 : c));
        break;
      case 1:
        break;
      case 2:
        flush();
        break;
      default:
        flush();
        words.emplace_back(1, char(c));
    }
  }
  flush();
}

}  // namespace

namespace text {

void bert_pre_tokenize(std::string_view s, std::vector<std::string>& words) {
  words.clear();
  bool ascii = true;
  for (char c : s) ascii &= uint8_t(c) < 0x80;
  if (ascii) return split_ascii(s, words);
  thread_local std::u32string a, b;
  utf8_to_u32(s, a);
  // BertNormalizer: clean_text (drop controls, any whitespace -> ' '), CJK ideographs spaced,
  // strip_accents (NFD, drop Mn), lowercase (per character). Same order as bert.rs.
  b.clear();
  for (char32_t c : a) {
    uint8_t p = tables::bert_props(c);
    if (p & tables::kBertRemoved) continue;
    if (p & tables::kBertSpace) {
      b.push_back(U' ');
    } else if (is_cjk(c)) {
      b.push_back(U' ');
      b.push_back(c);
      b.push_back(U' ');
    } else {
      b.push_back(c);
    }
  }
  nfd(b, a);
  size_t w = 0;
  for (char32_t c : a)
    if (!(tables::bert_props(c) & tables::kBertMn)) a[w++] = c;
  a.resize(w);
  lower_chars(a, b);
  // BertPreTokenizer: split on whitespace (removed), then on punctuation (isolated).
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) words.push_back(std::move(cur)), cur.clear();
  };
  for (char32_t c : b) {
    uint8_t p = tables::bert_props(c);
    if (p & tables::kBertSpace) {
      flush();
    } else if (p & tables::kBertPunct) {
      flush();
      words.emplace_back();
      utf8_append(words.back(), c);
    } else {
      utf8_append(cur, c);
    }
  }
  flush();
}

}  // namespace text

struct WordPieceTokenizer::Impl {
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> vocab;
  std::vector<std::string> tokens;  // id -> token (the line)
  std::vector<std::pair<std::string, int32_t>> specials;
  int32_t cls = -1, sep = -1, pad = -1, unk = -1;

  int32_t find(std::string_view s) const {
    auto it = vocab.find(s);
    return it == vocab.end() ? -1 : it->second;
  }

  // models/wordpiece: greedy longest-match-first; any failure makes the whole word [UNK].
  void wordpiece(std::string_view w, std::vector<int32_t>& out, std::string& key) const {
    size_t chars = 0;
    for (char c : w) chars += (uint8_t(c) & 0xC0) != 0x80;
    if (chars > size_t(kMaxInputCharsPerWord)) return out.push_back(unk);
    const size_t n0 = out.size();
    for (size_t start = 0; start < w.size();) {
      size_t end = w.size();
      int32_t id = -1;
      while (start < end) {
        key.assign(start > 0 ? "##" : "");
        key.append(w.substr(start, end - start));
        if ((id = find(key)) >= 0) break;
        do end--;
        while (end > start && (uint8_t(w[end]) & 0xC0) == 0x80);
      }
      if (id < 0) {
        out.resize(n0);
        return out.push_back(unk);
      }
      out.push_back(id);
      start = end;
    }
  }

  void encode_segment(std::string_view seg, size_t limit, std::vector<int32_t>& out, Scratch& t) const {
    text::bert_pre_tokenize(seg, t.words);
    for (const std::string& w : t.words) {
      if (out.size() >= limit) return;
      wordpiece(w, out, t.key);
    }
  }

  // Cleaned text -> ids: special tokens split out verbatim, the rest normalized and split.
  // Stops once `limit` ids are there (later ones could never show).
  void encode_clean(std::string_view s, size_t limit, std::vector<int32_t>& out, Scratch& t) const {
    size_t seg = 0;
    for (size_t i = s.find('['); i != std::string_view::npos && out.size() < limit; i = s.find('[', i)) {
      const std::pair<std::string, int32_t>* hit = nullptr;
      for (const auto& sp : specials)  // longest first
        if (s.compare(i, sp.first.size(), sp.first) == 0) {
          hit = &sp;
          break;
        }
      if (!hit) {
        i++;
        continue;
      }
      encode_segment(s.substr(seg, i - seg), limit, out, t);
      if (out.size() < limit) out.push_back(hit->second);
      i += hit->first.size();
      seg = i;
    }
    if (out.size() < limit) encode_segment(s.substr(seg), limit, out, t);
    if (out.size() > limit) out.resize(limit);
  }

  Status encode_into(std::string_view text, size_t limit, std::vector<int32_t>& out, Scratch& t) const {
    if (!text::clean_whitespace_ascii(text, t.text)) {
      if (size_t bad = text::utf8_invalid_offset(text); bad != std::string_view::npos)
        return Err{text::utf8_error_message(text, bad)};
      Status st = text::clean_whitespace(text, t.text, t.clean);
      if (!st.ok()) return st;
    }
    encode_clean(t.text, limit, out, t);
    return Status::success();
  }
};

WordPieceTokenizer::WordPieceTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WordPieceTokenizer::WordPieceTokenizer(WordPieceTokenizer&&) noexcept = default;
WordPieceTokenizer& WordPieceTokenizer::operator=(WordPieceTokenizer&&) noexcept = default;
WordPieceTokenizer::~WordPieceTokenizer() = default;

int32_t WordPieceTokenizer::vocab_size() const { return int32_t(impl_->tokens.size()); }
int32_t WordPieceTokenizer::cls_id() const { return impl_->cls; }
int32_t WordPieceTokenizer::sep_id() const { return impl_->sep; }
int32_t WordPieceTokenizer::pad_id() const { return impl_->pad; }
int32_t WordPieceTokenizer::unk_id() const { return impl_->unk; }

std::string WordPieceTokenizer::find_vocab(const std::string& hf_name, const std::string& explicit_path,
                                           const std::string& flag) {
  const std::string file = hf_name + "-vocab.txt";
  const std::string how = fmt::format(
      "The tokenizer \"{}\" (a model config's text_cfg.hf_tokenizer_name) needs its WordPiece vocabulary (the "
      "vocab.txt of the "
      "Hugging Face repository {}, one token per line), which cannot be shipped with openclip. Copy it from a machine "
      "that has it (e.g. ~/.cache/huggingface/hub/models--{}/snapshots/*/vocab.txt) to {} in a data folder{}, or "
      "set ${}",
      hf_name, hf_name, hf_name, file, vocab_flag_advice(flag), kEnvVocab);
  if (!explicit_path.empty()) {
    if (!fs::exists(explicit_path))
      OC_USER_ERROR("WordPiece vocabulary not found at {} (given{}). {}.", explicit_path,
                    flag.empty() ? "" : " with " + flag, how);
    return explicit_path;
  }
  if (const char* env = std::getenv(kEnvVocab); env && *env) {
    if (!fs::exists(env)) OC_USER_ERROR("WordPiece vocabulary not found at ${}={}. {}.", kEnvVocab, env, how);
    return env;
  }
  std::string looked;
  for (const std::string& d : data_dirs()) {
    for (const std::string& p : {fs::join(d, file), fs::join(fs::join(d, hf_name), "vocab.txt")}) {
      if (fs::exists(p)) return p;
      looked += "\n  " + p;
    }
  }
  OC_USER_ERROR("WordPiece vocabulary {} not found. Looked at:{} ${} (not set),{}\n{}.", file,
                flag.empty() ? "" : " " + flag + " (not given),", kEnvVocab, looked, how);
}

WordPieceTokenizer WordPieceTokenizer::load(const std::string& path) {
  auto read = fs::read_text(path);
  if (!read.ok()) OC_USER_ERROR("cannot read WordPiece vocabulary {}: {}", path, read.error());
  const std::string& data = read.value();

  auto impl = std::make_unique<Impl>();
  size_t line = 0;
  for (size_t pos = 0; pos < data.size(); line++) {  // Rust's lines(): no empty last line
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) nl = data.size();
    std::string_view l(data.data() + pos, nl - pos);
    pos = nl + 1;
    while (!l.empty() && std::strchr(" \t\r\v\f", l.back())) l.remove_suffix(1);  // trim_end
    if (size_t bad = text::utf8_invalid_offset(l); bad != std::string_view::npos)
      OC_USER_ERROR("WordPiece vocabulary {} is malformed: invalid UTF-8 at line {}, byte {} of the line.", path,
                    line + 1, bad);
    impl->tokens.emplace_back(l);
    impl->vocab[std::string(l)] = int32_t(line);
  }
  if (impl->tokens.empty()) OC_USER_ERROR("WordPiece vocabulary {} is empty.", path);
  for (const char* name : kSpecialTokens)
    if (int32_t id = impl->find(name); id >= 0) impl->specials.emplace_back(name, id);
  std::stable_sort(impl->specials.begin(), impl->specials.end(),
                   [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); });
  impl->cls = impl->find("[CLS]");
  impl->sep = impl->find("[SEP]");
  impl->pad = impl->find("[PAD]");
  impl->unk = impl->find("[UNK]");
  for (auto [name, id] : {std::pair{"[CLS]", impl->cls}, {"[SEP]", impl->sep}, {"[PAD]", impl->pad}, {"[UNK]", impl->unk}})
    if (id < 0)
      OC_USER_ERROR("WordPiece vocabulary {} has no {} token ({} lines): not a BERT vocab.txt.", path, name,
                    impl->tokens.size());
  return WordPieceTokenizer(std::move(impl));
}

Result<std::vector<int32_t>> WordPieceTokenizer::encode(std::string_view text) const {
  Scratch& t = scratch();
  t.ids.clear();
  Status st = impl_->encode_into(text, SIZE_MAX, t.ids, t);
  if (!st.ok()) return Err{st.error()};
  return std::vector<int32_t>(t.ids);
}

Status WordPieceTokenizer::tokenize(std::string_view text, std::span<int32_t> out, bool strip_sep_token) const {
  OC_CHECK(out.size() >= 2, "context length must be at least 2 for [CLS] and [SEP], got {}", out.size());
  std::fill(out.begin(), out.end(), 0);
  Scratch& t = scratch();
  t.ids.clear();
  t.ids.push_back(impl_->cls);
  // tokenizers truncates the text's ids to max_length - 2, then adds [CLS] and [SEP]; the
  // limit counts the [CLS] already in t.ids.
  Status st = impl_->encode_into(text, out.size() - 1, t.ids, t);
  if (!st.ok()) return st;
  if (t.ids.size() > out.size() - 1) t.ids.resize(out.size() - 1);
  t.ids.push_back(impl_->sep);
  t.ids.resize(out.size(), impl_->pad);
  for (size_t i = 0; i < out.size(); i++)
    out[i] = strip_sep_token && t.ids[i] == impl_->sep ? 0 : t.ids[i];
  return Status::success();
}

std::string WordPieceTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); i++) {
    int32_t id = ids[i];
    OC_CHECK(id >= 0 && id < vocab_size(), "token id {} at position {} is outside [0, {})", id, i, vocab_size());
    if (id == impl_->cls || id == impl_->sep || id == impl_->pad) continue;
    const std::string& tok = impl_->tokens[size_t(id)];
    if (!out.empty() && tok.size() > 2 && tok.compare(0, 2, "##") == 0) {
      out.append(tok, 2);
    } else {
      if (!out.empty()) out.push_back(' ');
      out += tok;
    }
  }
  return out;
}

}  // namespace oc
