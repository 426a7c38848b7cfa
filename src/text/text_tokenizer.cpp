// TextTokenizer implementations over Tokenizer (CLIP BPE) and WordPieceTokenizer, and the
// selection from a model config's text_cfg.
#include "text/text_tokenizer.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "core/machine.h"
#include "text/sentencepiece.h"
#include "text/tokenizer.h"
#include "text/wordpiece.h"

namespace oc {
namespace {

class ClipBpe final : public TextTokenizer {
 public:
  ClipBpe(Tokenizer tok, int ctx) : TextTokenizer(ctx), tok_(std::move(tok)) {}
  std::string name() const override { return "clip-bpe"; }
  int32_t vocab_size() const override { return tok_.vocab_size(); }
  Status tokenize(std::string_view text, std::span<int32_t> row) const override { return tok_.tokenize(text, row); }
  std::string decode(std::span<const int32_t> ids) const override { return tok_.decode(ids); }

 private:
  Tokenizer tok_;
};

class WordPiece final : public TextTokenizer {
 public:
  WordPiece(WordPieceTokenizer tok, std::string name, bool strip_sep, int ctx)
      : TextTokenizer(ctx), tok_(std::move(tok)), name_(std::move(name)), strip_sep_(strip_sep) {}
  std::string name() const override { return name_; }
  int32_t vocab_size() const override { return tok_.vocab_size(); }
  Status tokenize(std::string_view text, std::span<int32_t> row) const override {
    return tok_.tokenize(text, row, strip_sep_);
  }
  std::string decode(std::span<const int32_t> ids) const override { return tok_.decode(ids); }

 private:
  WordPieceTokenizer tok_;
  std::string name_;
  bool strip_sep_;
};

class SentencePiece final : public TextTokenizer {
 public:
  SentencePiece(SentencePieceTokenizer tok, std::string name, int ctx)
      : TextTokenizer(ctx), tok_(std::move(tok)), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  int32_t vocab_size() const override { return tok_.vocab_size(); }
  int32_t id_limit() const override { return tok_.id_limit(); }
  Status tokenize(std::string_view text, std::span<int32_t> row) const override { return tok_.tokenize(text, row); }
  std::string decode(std::span<const int32_t> ids) const override { return tok_.decode(ids); }

 private:
  SentencePieceTokenizer tok_;
  std::string name_;
};

// The model file of SentencePiece tokenizer `name`: `explicit_path` (--hf-tokenizer-vocab), or
// <data folder>/<name>/tokenizer.json or spiece.model (a copy of the Hugging Face folder).
std::string find_sentencepiece_model(const std::string& name, const std::string& explicit_path,
                                     const std::string& flag) {
  const std::string how = fmt::format(
      "The tokenizer \"{}\" needs the SentencePiece model of the Hugging Face repository {} (tokenizer.json or "
      "spiece.model), which is not shipped with openclip: copy that folder into a data folder as {}/{}",
      name, name, name, vocab_flag_advice(flag));
  if (!explicit_path.empty()) {
    if (!fs::exists(explicit_path))
      OC_USER_ERROR("SentencePiece model not found at {} ({}). {}.", explicit_path, flag.empty() ? "given" : flag, how);
    return explicit_path;
  }
  std::string looked;
  for (const std::string& d : data_dirs())
    for (const char* file : {"tokenizer.json", "spiece.model"}) {
      std::string p = fs::join(fs::join(d, name), file);
      if (fs::exists(p)) return p;
      looked += "\n  " + p;
    }
  OC_USER_ERROR("SentencePiece model of {} not found. Looked at:{}{}\n{}.", name,
                flag.empty() ? "" : " " + flag + " (not given),", looked, how);
}

}  // namespace

std::string vocab_flag_advice(const std::string& flag) {
  if (!flag.empty()) return ", or pass " + flag + " PATH";
  return ", or load the model from a Hugging Face hub folder or hf-hub:ORG/NAME repository that holds the file (its "
         "tokenizer files are read for its text tower)";
}

bool is_sentencepiece_tokenizer_name(const std::string& name) {
  return name.rfind("timm/", 0) == 0 && name.find("SigLIP") != std::string::npos;
}

std::vector<int32_t> TextTokenizer::tokenize_batch(std::span<const std::string> texts, std::vector<size_t>* bad) const {
  const size_t ctx = size_t(context_length_), n = texts.size();
  std::vector<int32_t> empty(ctx);
  OC_CHECK(tokenize("", empty).ok(), "tokenizing the empty text failed");
  std::vector<int32_t> result(n * ctx, 0);
  std::vector<uint8_t> failed(n, 0);
#pragma omp parallel for schedule(dynamic, 256)
  for (int64_t i = 0; i < int64_t(n); i++) {
    std::span<int32_t> row(result.data() + size_t(i) * ctx, ctx);
    if (!tokenize(texts[size_t(i)], row).ok()) {
      failed[size_t(i)] = 1;
      std::copy(empty.begin(), empty.end(), row.begin());
    }
  }
  if (bad) {
    bad->clear();
    for (size_t i = 0; i < n; i++)
      if (failed[i]) bad->push_back(i);
  }
  return result;
}

TextTokenizerSpec text_tokenizer_spec_from_config(const std::string& json_text, const std::string& source) {
  nlohmann::json j = parse_json(json_text, "model config " + source);
  TextTokenizerSpec spec;
  if (!j.is_object() || !j.contains("text_cfg")) return spec;
  const nlohmann::json& t = j["text_cfg"];
  try {
    if (t.contains("context_length"))
      spec.context_length = json_int<int>(t["context_length"], "model config " + source, "text_cfg.context_length");
    if (t.contains("hf_tokenizer_name")) spec.hf_tokenizer_name = t["hf_tokenizer_name"].get<std::string>();
    if (t.contains("tokenizer_kwargs")) {
      for (const auto& [key, value] : t["tokenizer_kwargs"].items()) {
        if (key == "strip_sep_token") {
          spec.strip_sep_token = value.get<bool>();
        } else if (key == "clean" && value.get<std::string>() == "whitespace" && !spec.hf_tokenizer_name.empty()) {
          // HFTokenizer's default cleaning: what is implemented.
        } else if (key == "clean" && value.get<std::string>() == "canonicalize" &&
                   is_sentencepiece_tokenizer_name(spec.hf_tokenizer_name)) {
          spec.clean = "canonicalize";  // the SigLIP configs
        } else {
          OC_USER_ERROR(
              "model config {}: text_cfg.tokenizer_kwargs.{} = {} is not supported (implemented: "
              "strip_sep_token, clean=\"whitespace\" with hf_tokenizer_name, clean=\"canonicalize\" with a SigLIP "
              "one).",
              source, key, value.dump());
        }
      }
    }
  } catch (const nlohmann::json::exception& e) {
    OC_USER_ERROR("model config {}: bad text_cfg: {}", source, e.what());
  }
  return spec;
}

std::unique_ptr<TextTokenizer> make_text_tokenizer(const TextTokenizerSpec& spec) {
  if (spec.hf_tokenizer_name.empty()) {
    if (spec.strip_sep_token)
      OC_USER_ERROR("strip_sep_token is a Hugging Face tokenizer option; CLIP's BPE tokenizer (no "
                    "hf_tokenizer_name) does not take it.");
    if (spec.context_length < 1) OC_USER_ERROR("context length must be at least 1, got {}", spec.context_length);
    return std::make_unique<ClipBpe>(Tokenizer::load_default(spec.vocab_path), spec.context_length);
  }
  if (is_sentencepiece_tokenizer_name(spec.hf_tokenizer_name)) {
    if (spec.strip_sep_token)
      OC_USER_ERROR("strip_sep_token: T5's SentencePiece tokenizer ({}) has no [SEP] token.", spec.hf_tokenizer_name);
    // HFTokenizer's default is clean="whitespace"; the SigLIP configs ask for "canonicalize".
    using Clean = SentencePieceTokenizer::Clean;
    Clean clean = spec.clean == "canonicalize" ? Clean::Canonicalize : Clean::Whitespace;
    if (!spec.clean.empty() && spec.clean != "canonicalize" && spec.clean != "whitespace")
      OC_USER_ERROR("clean=\"{}\" with {} is not implemented (\"canonicalize\", \"whitespace\").", spec.clean,
                    spec.hf_tokenizer_name);
    auto tok = SentencePieceTokenizer::load(
        find_sentencepiece_model(spec.hf_tokenizer_name, spec.vocab_path, spec.vocab_flag), clean);
    if (spec.context_length < int(tok.prefix_ids().size() + tok.suffix_ids().size()) || spec.context_length < 1)
      OC_USER_ERROR("context length {} is too short for {}'s special tokens", spec.context_length,
                    spec.hf_tokenizer_name);
    return std::make_unique<SentencePiece>(std::move(tok), spec.hf_tokenizer_name, spec.context_length);
  }
  if (spec.hf_tokenizer_name != "bert-base-uncased")
    OC_USER_ERROR(
        "hf_tokenizer_name \"{}\" is not supported: only \"bert-base-uncased\" (WordPiece, the -CLIPA "
        "configs) and \"timm/...SigLIP...\" (SentencePiece, the SigLIP configs) are implemented; other Hugging "
        "Face tokenizers need the transformers library.",
        spec.hf_tokenizer_name);
  if (spec.context_length < 2)
    OC_USER_ERROR("context length must be at least 2 for [CLS] and [SEP] (hf_tokenizer_name {}), got {}",
                  spec.hf_tokenizer_name, spec.context_length);
  WordPieceTokenizer tok = WordPieceTokenizer::load(
      WordPieceTokenizer::find_vocab(spec.hf_tokenizer_name, spec.vocab_path, spec.vocab_flag));
  return std::make_unique<WordPiece>(std::move(tok), spec.hf_tokenizer_name, spec.strip_sep_token, spec.context_length);
}

}  // namespace oc
