// The SigLIP2 configs' tokenizer: Gemma's tokenizer.json (a BPE model with byte fallback) as
// OpenCLIP 3.3's HFTokenizer runs it through transformers' GemmaTokenizerFast, against Hugging
// Face's `tokenizers` on a small BPE trained in Gemma's layout by
// tests/reference/gemma_bpe_ref.py (committed in tests/text/data/gemma_bpe/ with the golden
// ids; the real 256,000-piece file is not downloadable where the tests run), and the errors for
// bad files and bad text.
#include <gtest/gtest.h>
#include <zlib.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "error_of.h"
#include "test_util.h"
#include "text/sentencepiece.h"
#include "text/text_tokenizer.h"

namespace oc {
namespace {

using json = nlohmann::json;
using test::error_of;

std::string gemma_dir() { return std::string(OPENCLIP_TEST_DIR) + "/text/data/gemma_bpe"; }
std::string spm_venv_python() { return std::string(OPENCLIP_SOURCE_DIR) + "/.spmref/bin/python"; }

std::vector<json> golden_rows(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  OC_CHECK(f, "cannot open {}", path);
  std::string all;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) all.append(buf, size_t(n));
  gzclose(f);
  std::vector<json> rows;
  for (size_t pos = 0; pos < all.size();) {
    size_t end = all.find('\n', pos);
    if (end == std::string::npos) end = all.size();
    if (end > pos) rows.push_back(json::parse(all.substr(pos, end - pos)));
    pos = end + 1;
  }
  return rows;
}

// Every golden text through `tok`: the ids without special tokens, and the 64-id row.
void expect_golden(const TextTokenizer& tok, const SentencePieceTokenizer* raw, const std::string& path) {
  const auto rows = golden_rows(path);
  EXPECT_GE(rows.size(), 1000u);
  size_t bad = 0;
  for (const json& r : rows) {
    const std::string text = r["text"].get<std::string>();
    std::vector<int32_t> row(64);
    const Status st = tok.tokenize(text, row);
    bool ok = st.ok() && row == r["row"].get<std::vector<int32_t>>();
    if (raw) {
      auto ids = raw->encode(text);
      ok = ok && ids.ok() && ids.value() == r["ids"].get<std::vector<int32_t>>();
    }
    if (!ok && ++bad <= 5)
      ADD_FAILURE() << json(text).dump() << ": row " << json(row).dump() << " want " << r["row"].dump()
                    << (raw && raw->encode(text).ok() ? ", ids " + json(raw->encode(text).value()).dump() : "")
                    << " want " << r["ids"].dump();
  }
  EXPECT_EQ(bad, 0u) << "of " << rows.size();
}

std::unique_ptr<TextTokenizer> siglip2_tokenizer(const std::string& tokenizer_json) {
  TextTokenizerSpec spec;
  spec.hf_tokenizer_name = "timm/ViT-B-16-SigLIP2";
  spec.context_length = 64;
  spec.clean = "canonicalize";
  spec.vocab_path = tokenizer_json;
  return make_text_tokenizer(spec);
}

TEST(GemmaBpeReference, CommittedGoldenMatches) {
  const SentencePieceTokenizer raw = SentencePieceTokenizer::load(gemma_dir() + "/tokenizer.json");
  // tokenizer_config.json (GemmaTokenizer, add_bos_token and add_eos_token true) overrides the
  // file's "<bos> $A" post-processor; pad "<pad>".
  EXPECT_EQ(raw.prefix_ids(), std::vector<int32_t>{2});
  EXPECT_EQ(raw.suffix_ids(), std::vector<int32_t>{1});
  EXPECT_EQ(raw.pad_id(), 0);
  EXPECT_EQ(raw.vocab_size(), 1756);
  // The SigLIP2 config's tokenizer name selects it (OpenCLIP's clean="canonicalize").
  expect_golden(*siglip2_tokenizer(gemma_dir() + "/tokenizer.json"), &raw, gemma_dir() + "/golden.jsonl.gz");
}

// Runs gemma_bpe_ref.py golden again on the committed model: the committed ids must be current.
TEST(GemmaBpeReference, RegeneratedGoldenMatches) {
  if (!fs::exists(spm_venv_python()))
    GTEST_SKIP() << "no .spmref venv (scripts/setup_spm_ref.sh): cannot regenerate the Gemma BPE golden ids";
  const std::string out = test::fresh_dir("gemma_golden") + "/golden.jsonl.gz";
  const test::Run r = test::run(spm_venv_python() + " " OPENCLIP_TEST_DIR "/reference/gemma_bpe_ref.py golden " +
                                gemma_dir() + " " + out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(golden_rows(out), golden_rows(gemma_dir() + "/golden.jsonl.gz"));
}

// A folder with the tokenizer.json alone keeps the file's post-processor ("<bos> $A").
TEST(GemmaBpe, WithoutTokenizerConfigTheFilesPostProcessorStays) {
  const std::string dir = test::fresh_dir("gemma_alone");
  fs::write_atomic(dir + "/tokenizer.json", fs::read_text(gemma_dir() + "/tokenizer.json").value());
  const SentencePieceTokenizer t = SentencePieceTokenizer::load(dir + "/tokenizer.json");
  EXPECT_EQ(t.prefix_ids(), std::vector<int32_t>{2});
  EXPECT_TRUE(t.suffix_ids().empty());
  EXPECT_EQ(t.pad_id(), 0) << "<pad>";
  std::vector<int32_t> row(8);
  ASSERT_TRUE(t.tokenize("", row).ok());
  EXPECT_EQ(row, (std::vector<int32_t>{2, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(GemmaBpe, InvalidUtf8IsAnError) {
  const auto tok = siglip2_tokenizer(gemma_dir() + "/tokenizer.json");
  std::vector<int32_t> row(64, 7);
  const Status st = tok->tokenize("a dog \xC3\x28 x", row);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("invalid UTF-8 at byte offset 6"), std::string::npos) << st.error();
  EXPECT_EQ(row, std::vector<int32_t>(64, 0));
}

// A hand-made model: without byte fallback, unknown characters become <unk>, a run of them one
// <unk> with fuse_unk (tokenizers' merge_word), and merges apply by rank; merges as [a, b]
// arrays read as "a b" strings.
TEST(GemmaBpe, UnknownRunsAndMergeRanks) {
  auto make = [](bool fuse, const json& merges) {
    json j = json::parse(R"({"model": {"type": "BPE", "unk_token": "<unk>",
        "vocab": {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "bc": 5, "abc": 6}}})");
    j["model"]["fuse_unk"] = fuse;
    j["model"]["merges"] = merges;
    return SentencePieceTokenizer::load_json(j.dump(), "hand.json");
  };
  const json strings = json::parse(R"(["b c", "a b", "a bc"])"),
             arrays = json::parse(R"([["b", "c"], ["a", "b"], ["a", "bc"]])");
  for (const json& merges : {strings, arrays}) {
    const SentencePieceTokenizer fused = make(true, merges), apart = make(false, merges);
    EXPECT_EQ(fused.encode("xyabc").value(), (std::vector<int32_t>{0, 6})) << "b c first (rank 0), then a bc";
    EXPECT_EQ(apart.encode("xyabc").value(), (std::vector<int32_t>{0, 0, 6}));
    EXPECT_EQ(fused.encode("abab").value(), (std::vector<int32_t>{4, 4}));
    EXPECT_EQ(fused.encode("cab").value(), (std::vector<int32_t>{3, 4}));
  }
}

std::string edited(const std::function<void(json&)>& edit) {
  json j = json::parse(fs::read_text(gemma_dir() + "/tokenizer.json").value());
  edit(j);
  return j.dump();
}

TEST(GemmaBpe, BadFilesAreNamed) {
  auto err = [](const std::function<void(json&)>& edit) {
    return error_of([&] { SentencePieceTokenizer::load_json(edited(edit), "bad.json"); });
  };
  std::string e = err([](json& j) { j["model"]["dropout"] = 0.1; });
  EXPECT_NE(e.find("bad.json: model.dropout 0.1 is not supported"), std::string::npos) << e;
  e = err([](json& j) { j["model"]["continuing_subword_prefix"] = "##"; });
  EXPECT_NE(e.find("model.continuing_subword_prefix \"##\" is not supported"), std::string::npos) << e;
  e = err([](json& j) { j["model"]["cache_capacity"] = 10; });
  EXPECT_NE(e.find("model.cache_capacity is not a BPE option"), std::string::npos) << e;
  e = err([](json& j) { j["model"]["merges"][3] = "onlyone"; });
  EXPECT_NE(e.find("model.merges[3] \"onlyone\" is not two pieces separated by one space"), std::string::npos) << e;
  e = err([](json& j) { j["model"]["merges"][5] = "▁ zzqq"; });
  EXPECT_NE(e.find("model.merges[5]: \"zzqq\" is not in model.vocab"), std::string::npos) << e;
  e = err([](json& j) { j["model"]["merges"][0] = 12; });
  EXPECT_NE(e.find("model.merges[0] is not \"a b\" nor [\"a\", \"b\"]"), std::string::npos) << e;
  e = err([](json& j) {
    auto& v = j["model"]["vocab"];
    v["<0x41>x"] = v["<0x41>"];
    v.erase("<0x41>");
  });
  EXPECT_NE(e.find("model.byte_fallback is true but model.vocab has no piece \"<0x41>\""), std::string::npos) << e;
  e = err([](json& j) { j["model"]["vocab"]["<eos>"] = 3; });
  EXPECT_NE(e.find("the ids must be 0 .. 1755 without repeats"), std::string::npos) << e;
  e = err([](json& j) { j["model"]["unk_token"] = "<nope>"; });
  EXPECT_NE(e.find("model.unk_token \"<nope>\" is not in model.vocab"), std::string::npos) << e;
  e = err([](json& j) { j["model"]["type"] = "WordLevel"; });
  EXPECT_NE(e.find("model \"WordLevel\" is not supported"), std::string::npos) << e;
}

TEST(GemmaBpe, BadTokenizerConfigIsNamed) {
  const std::string dir = test::fresh_dir("gemma_cfg");
  fs::write_atomic(dir + "/tokenizer.json", fs::read_text(gemma_dir() + "/tokenizer.json").value());
  auto err = [&](const std::string& cfg) {
    fs::write_atomic(dir + "/tokenizer_config.json", cfg);
    return error_of([&] { SentencePieceTokenizer::load(dir + "/tokenizer.json"); });
  };
  std::string e = err(R"({"tokenizer_class": "GemmaTokenizer", "add_eos_token": "yes"})");
  EXPECT_NE(e.find("tokenizer_config.json: \"add_eos_token\" must be true or false"), std::string::npos) << e;
  e = err(R"({"tokenizer_class": "GemmaTokenizer", "bos_token": {"content": "<s>"}})");
  EXPECT_NE(e.find("bos_token \"<s>\" is not in"), std::string::npos) << e;
  e = err(R"({"tokenizer_class": "GemmaTokenizer", "add_bos_token": false)");
  EXPECT_NE(e.find("tokenizer_config.json"), std::string::npos) << e;
  // Another class keeps the file's post-processor.
  EXPECT_EQ(err(R"({"tokenizer_class": "T5Tokenizer", "add_eos_token": true})"), "");
  const SentencePieceTokenizer t = SentencePieceTokenizer::load(dir + "/tokenizer.json");
  EXPECT_TRUE(t.suffix_ids().empty());
}

}  // namespace
}  // namespace oc
