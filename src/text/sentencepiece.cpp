#include "text/sentencepiece.h"

#include <algorithm>
#include <optional>

#include "core/check.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "text/canonicalize.h"
#include "text/hf_tokenizer_json.h"
#include "text/spm_model.h"
#include "text/unicode.h"

namespace oc {

struct SentencePieceTokenizer::Impl {
  Format format;
  Clean clean;
  std::optional<text::SpmModel> spm;
  std::optional<text::HfTokenizerJson> hf;
  int32_t pad = 0;
  std::vector<int32_t> prefix, suffix;

  int32_t vocab_size() const { return spm ? spm->vocab_size() : hf->vocab_size(); }
  const std::string& piece(int32_t id) const { return spm ? spm->piece(id) : hf->piece(id); }
  Status encode_valid(std::string_view text, std::vector<int32_t>& ids) const {
    if (!spm) return hf->encode(text, ids);
    spm->encode(text, ids);
    return Status::success();
  }
  Status clean_text(std::string_view in, std::string& out) const {
    text::CleanScratch scratch;
    switch (clean) {
      case Clean::Canonicalize:
        return text::clean_canonicalize(in, out, scratch);
      case Clean::Whitespace:
        return text::clean_whitespace(in, out, scratch);
      case Clean::Lower:
        return text::clean_lower(in, out, scratch);
      case Clean::None:
        out.assign(in);
        return Status::success();
    }
    return Status::success();
  }
};

namespace {

// A special token of tokenizer_config.json: a string or an AddedToken object {"content": ...}.
std::string config_token(const nlohmann::json& cfg, const char* key, const char* dflt, const std::string& where) {
  if (!cfg.contains(key) || cfg[key].is_null()) return dflt;
  const nlohmann::json& t = cfg[key];
  if (t.is_string()) return t.get<std::string>();
  if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
  OC_USER_ERROR("{}: \"{}\" must be a token (a string or {{\"content\": ...}}), got {}", where, key,
                t.dump().substr(0, 100));
}

bool config_flag(const nlohmann::json& cfg, const char* key, bool dflt, const std::string& where) {
  if (!cfg.contains(key) || cfg[key].is_null()) return dflt;
  if (!cfg[key].is_boolean()) OC_USER_ERROR("{}: \"{}\" must be true or false, got {}", where, key, cfg[key].dump());
  return cfg[key].get<bool>();
}

}  // namespace

// transformers' GemmaTokenizerFast (and LlamaTokenizerFast) replace tokenizer.json's
// post-processor with [bos] $A [eos] as tokenizer_config.json's add_bos_token (default true) and
// add_eos_token (default false) say (update_post_processor), and pad with its pad_token
// ("<pad>"). Other tokenizer classes keep the file's post-processor and the padding above.
void apply_tokenizer_config(SentencePieceTokenizer::Impl& m, const std::string& tokenizer_json_path) {
  const std::string path = fs::join(fs::dirname(tokenizer_json_path), "tokenizer_config.json");
  if (!fs::exists(path)) return;
  auto text = fs::read_text(path);
  if (!text.ok()) OC_USER_ERROR("cannot read {}: {}", path, text.error());
  const nlohmann::json cfg = parse_json(text.value(), path);
  if (!cfg.is_object()) OC_USER_ERROR("{}: expected a JSON object", path);
  const std::string cls = cfg.value("tokenizer_class", "");
  if (cls.rfind("Gemma", 0) != 0 && cls.rfind("Llama", 0) != 0) return;
  auto id = [&](const char* key, const char* dflt) {
    const std::string name = config_token(cfg, key, dflt, path);
    const int32_t i = m.hf->piece_id(name);
    if (i < 0) OC_USER_ERROR("{}: {} \"{}\" is not in {}'s vocabulary", path, key, name, tokenizer_json_path);
    return i;
  };
  m.prefix.clear(), m.suffix.clear();
  if (config_flag(cfg, "add_bos_token", true, path)) m.prefix.push_back(id("bos_token", "<bos>"));
  if (config_flag(cfg, "add_eos_token", false, path)) m.suffix.push_back(id("eos_token", "<eos>"));
  m.pad = id("pad_token", "<pad>");
}

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept = default;
SentencePieceTokenizer& SentencePieceTokenizer::operator=(SentencePieceTokenizer&&) noexcept = default;
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

SentencePieceTokenizer SentencePieceTokenizer::load_json(std::string_view json_text, const std::string& source,
                                                         Clean clean) {
  auto impl = std::make_unique<Impl>();
  impl->clean = clean;
  impl->format = Format::TokenizerJson;
  impl->hf.emplace(json_text, source);
  impl->prefix = impl->hf->prefix_ids();
  impl->suffix = impl->hf->suffix_ids();
  // SigLIP pads with "</s>" (1), not "<pad>" (0): see pad_id() in sentencepiece.h.
  int32_t pad = impl->hf->piece_id("</s>");
  if (pad < 0) pad = impl->hf->piece_id("<pad>");
  impl->pad = pad >= 0 ? pad : 0;
  return SentencePieceTokenizer(std::move(impl));
}

SentencePieceTokenizer SentencePieceTokenizer::load(const std::string& path, Clean clean) {
  auto read = fs::read_text(path);
  if (!read.ok()) OC_USER_ERROR("cannot read SentencePiece model {}: {}", path, read.error());
  const std::string& data = read.value();
  size_t first = data.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && data[first] == '{') {
    SentencePieceTokenizer t = load_json(data, path, clean);
    apply_tokenizer_config(*t.impl_, path);
    return t;
  }
  auto impl = std::make_unique<Impl>();
  impl->clean = clean;
  impl->format = Format::SpieceModel;
  impl->spm.emplace(data, path);
  if (impl->spm->eos_id() >= 0) impl->suffix = {impl->spm->eos_id()};
  const int32_t eos = impl->spm->eos_id(), pad = impl->spm->pad_id();
  impl->pad = eos >= 0 ? eos : pad >= 0 ? pad : 0;
  return SentencePieceTokenizer(std::move(impl));
}

SentencePieceTokenizer::Format SentencePieceTokenizer::format() const { return impl_->format; }
int32_t SentencePieceTokenizer::vocab_size() const { return impl_->vocab_size(); }
int32_t SentencePieceTokenizer::id_limit() const { return impl_->hf ? impl_->hf->id_limit() : impl_->vocab_size(); }
int32_t SentencePieceTokenizer::unk_id() const { return impl_->spm ? impl_->spm->unk_id() : impl_->hf->unk_id(); }
int32_t SentencePieceTokenizer::pad_id() const { return impl_->pad; }
const std::vector<int32_t>& SentencePieceTokenizer::suffix_ids() const { return impl_->suffix; }
const std::vector<int32_t>& SentencePieceTokenizer::prefix_ids() const { return impl_->prefix; }

Result<std::vector<int32_t>> SentencePieceTokenizer::encode(std::string_view text) const {
  if (size_t bad = text::utf8_invalid_offset(text); bad != std::string_view::npos)
    return Err{text::utf8_error_message(text, bad)};
  std::vector<int32_t> ids;
  if (Status st = impl_->encode_valid(text, ids); !st.ok()) return Err{st.error()};
  return ids;
}

Status SentencePieceTokenizer::tokenize(std::string_view text, std::span<int32_t> row) const {
  std::fill(row.begin(), row.end(), 0);
  const Impl& m = *impl_;
  size_t specials = m.prefix.size() + m.suffix.size();
  if (row.size() < specials)
    return Err{fmt::format("context length {} is shorter than the {} special tokens", row.size(), specials)};
  if (size_t bad = text::utf8_invalid_offset(text); bad != std::string_view::npos)
    return Err{text::utf8_error_message(text, bad)};
  std::string cleaned;
  if (Status st = m.clean_text(text, cleaned); !st.ok()) return st;
  std::vector<int32_t> ids;
  if (Status st = m.encode_valid(cleaned, ids); !st.ok()) return st;
  ids.resize(std::min(ids.size(), row.size() - specials));
  auto out = std::copy(m.prefix.begin(), m.prefix.end(), row.begin());
  out = std::copy(ids.begin(), ids.end(), out);
  out = std::copy(m.suffix.begin(), m.suffix.end(), out);
  std::fill(out, row.end(), m.pad);
  return Status::success();
}

std::vector<int32_t> SentencePieceTokenizer::tokenize_batch(std::span<const std::string> texts, int context_length,
                                                            std::vector<size_t>* bad) const {
  OC_CHECK(context_length > 0, "context_length {}", context_length);
  const size_t n = size_t(context_length);
  std::vector<int32_t> out(texts.size() * n);
  std::vector<char> failed(texts.size(), 0);
#pragma omp parallel for schedule(dynamic, 64)
  for (int64_t i = 0; i < int64_t(texts.size()); i++) {
    std::span<int32_t> row(out.data() + size_t(i) * n, n);
    if (!tokenize(texts[size_t(i)], row).ok()) {
      failed[size_t(i)] = 1;
      (void)tokenize("", row);
    }
  }
  if (bad)
    for (size_t i = 0; i < texts.size(); i++)
      if (failed[i]) bad->push_back(i);
  return out;
}

std::string SentencePieceTokenizer::decode(std::span<const int32_t> ids) const {
  const Impl& m = *impl_;
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= m.vocab_size() || id == m.pad) continue;
    if (std::find(m.suffix.begin(), m.suffix.end(), id) != m.suffix.end()) continue;
    if (std::find(m.prefix.begin(), m.prefix.end(), id) != m.prefix.end()) continue;
    if (m.spm && m.spm->is_control(id)) continue;
    out += m.piece(id);
  }
  std::string text;
  const std::string_view meta = "\xE2\x96\x81";  // U+2581 (tokenizer.json names its own)
  std::string_view rep = m.hf && !m.hf->metaspace().empty() ? std::string_view(m.hf->metaspace()) : meta;
  for (size_t i = 0; i < out.size();) {
    if (out.compare(i, rep.size(), rep) == 0) {
      text.push_back(' ');
      i += rep.size();
    } else {
      text.push_back(out[i++]);
    }
  }
  if (!text.empty() && text[0] == ' ') text.erase(0, 1);
  return text;
}

}  // namespace oc
