// Issue 42's tokenizer findings, each from its repro: a tokenizer.json whose charsmap gives
// invalid UTF-8 (#1), a spiece.model that crashed libsentencepiece (#2), deep JSON and deep
// Sequences (#3), growth bombs (#7), errors that named neither file nor key (#13) and silent
// integer truncation (#15). Every hostile file is built here; each must be an error naming
// the file and what is wrong, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "test_util.h"
#include "text/hf_tokenizer_json.h"
#include "text/sentencepiece.h"
#include "text_test_util.h"

namespace oc {
namespace {

using nlohmann::json;

std::string spm_dir() { return std::string(OPENCLIP_TEST_DIR) + "/text/data/spm"; }

std::string base64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t w = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) w |= uint32_t(uint8_t(in[i + 1])) << 8;
    if (i + 2 < in.size()) w |= uint8_t(in[i + 2]);
    out += k[w >> 18];
    out += k[(w >> 12) & 63];
    out += i + 1 < in.size() ? k[(w >> 6) & 63] : '=';
    out += i + 2 < in.size() ? k[w & 63] : '=';
  }
  return out;
}

// A Darts-clone charsmap of 512 units mapping the one byte `key` to the replacement at byte
// `value_at` of `strings`: root offset 256 (state 256), the key's unit at 256 ^ key leading
// to state 100, whose unit holds the value. `root_state` moves the root elsewhere.
std::string charsmap(uint8_t key, const std::string& strings, uint32_t value_at, uint32_t root_state = 256) {
  std::vector<uint32_t> u(512, 0);
  u[0] = root_state << 10;
  const uint32_t idx = 256 ^ key;
  u[idx] = ((idx ^ 100u) << 10) | (1u << 8) | key;
  u[100] = (1u << 31) | value_at;
  std::string blob(4, '\0');
  const uint32_t bytes = uint32_t(u.size() * 4);
  std::memcpy(blob.data(), &bytes, 4);
  blob.append(reinterpret_cast<const char*>(u.data()), bytes);
  return blob + strings;
}

json tokenizer_json(const json& normalizer, const json& pre_tokenizer = nullptr) {
  const json vocab = json::array({json::array({"<unk>", 0.0}), json::array({"b", -1.0}), json::array({"a", -2.0})});
  return {{"model", {{"type", "Unigram"}, {"unk_id", 0}, {"vocab", vocab}}},
          {"normalizer", normalizer},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", nullptr},
          {"added_tokens", json::array()}};
}

std::string load_error(const std::string& text, const std::string& source = "t/tokenizer.json") {
  try {
    text::HfTokenizerJson t(text, source);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "loaded: " << text.substr(0, 200);
  return "";
}

json precompiled(const std::string& blob) { return {{"type", "Precompiled"}, {"precompiled_charsmap", base64(blob)}}; }

#define EXPECT_HAS(s, part) EXPECT_NE((s).find(part), std::string::npos) << (s)

TEST(HostileTokenizer, CharsmapWithInvalidUtf8OutputIsRefusedAtLoad) {
  // The well-formed map ("a" -> "b") works, so the refusals below are of the damage alone.
  text::HfTokenizerJson good(tokenizer_json(precompiled(charsmap('a', std::string("b\0", 2), 0))).dump(), "good.json");
  std::vector<int32_t> ids;
  ASSERT_TRUE(good.encode("a", ids).ok());
  EXPECT_EQ(ids, std::vector<int32_t>{1});  // "b"
  // #1: the replacement is a lone lead byte: tokenize read past the end of its table.
  std::string e = load_error(tokenizer_json(precompiled(charsmap('a', std::string("\xF0\0", 2), 0))).dump());
  EXPECT_HAS(e, "t/tokenizer.json: normalizer.precompiled_charsmap: precompiled_charsmap: the replacement string");
  EXPECT_HAS(e, "is not UTF-8: invalid UTF-8 at byte offset 0 (bytes 0xF0)");
  e = load_error(tokenizer_json(precompiled(charsmap('a', std::string("\xC3\xA9\0", 3), 1))).dump());
  EXPECT_HAS(e, "trie unit 100 (byte offset 404) holds a replacement offset inside a character");
  e = load_error(tokenizer_json(precompiled(charsmap('a', std::string("b\0", 2), 100))).dump());
  EXPECT_HAS(e, "holds a replacement offset past the strings' end");
  e = load_error(tokenizer_json(precompiled(charsmap('a', std::string("b\0", 2), 0, 600))).dump());
  EXPECT_HAS(e, "trie unit 600 (byte offset 2404) is reached but lies past the trie's end");
  e = load_error(tokenizer_json(precompiled(charsmap('a', "b", 0))).dump());
  EXPECT_HAS(e, "do not end with a NUL byte");
}

// The protobuf pieces of a spiece.model: a length-delimited field.
std::string varint(uint64_t v) {
  std::string s;
  for (; v >= 0x80; v >>= 7) s += char(0x80 | (v & 0x7F));
  return s + char(v);
}
std::string field(uint32_t number, const std::string& payload) {
  return varint(uint64_t(number) << 3 | 2) + varint(payload.size()) + payload;
}

std::string spm_error(const std::string& bytes, const std::string& name) {
  const std::string path = test::temp_path(name);
  test::write_all(path, bytes);
  try {
    SentencePieceTokenizer::load(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << name << " loaded";
  return "";
}

TEST(HostileTokenizer, SpieceModelIsValidatedBeforeTheLibraryReadsIt) {
  // #2. Appended fields are merged by protobuf: the later normalizer_spec's charsmap and the
  // extra piece are what libsentencepiece would index.
  const std::string model = test::read_all(spm_dir() + "/spiece.model");
  const json tj = json::parse(test::read_all(spm_dir() + "/tokenizer.json"));
  const std::string b64 = tj["normalizer"]["normalizers"][0]["precompiled_charsmap"].get<std::string>();
  // The same charsmap, well-formed, loads and tokenizes (the control).
  std::string real;
  {
    const std::string path = test::temp_path("charsmap.json");
    test::write_all(path, tokenizer_json(json{{"type", "Precompiled"}, {"precompiled_charsmap", b64}}).dump());
    ASSERT_NO_THROW(SentencePieceTokenizer::load(path));
  }
  const std::string ok_path = test::temp_path("ok.model");
  test::write_all(ok_path, model + field(3, field(1, "nmt_nfkc") + field(2, charsmap('a', std::string("b\0", 2), 0))));
  auto ok = SentencePieceTokenizer::load(ok_path);
  EXPECT_TRUE(ok.encode("a dog").ok());

  std::string e = spm_error(model + field(3, field(2, charsmap('a', std::string("b\0", 2), 0, 600))), "trie.model");
  EXPECT_HAS(e, "trie.model (normalizer_spec at byte offset");
  EXPECT_HAS(e, "is reached but lies past the trie's end");
  e = spm_error(model + field(5, field(2, charsmap('a', std::string("b\0", 2), 5000))), "value.model");
  EXPECT_HAS(e, "value.model (denormalizer_spec at byte offset");
  EXPECT_HAS(e, "holds a replacement offset past the strings' end");
  e = spm_error(model + field(1, field(1, std::string(1 << 20, 'x'))), "piece.model");
  EXPECT_HAS(e, "piece.model: the piece at byte offset");
  EXPECT_HAS(e, "has 1048576 bytes (a piece has 1 to 2048)");
  // Found by fuzz_spiece: a piece starting with NUL aborted the process inside Darts-clone.
  e = spm_error(model + field(1, field(1, std::string("\0ab", 3))), "nul.model");
  EXPECT_HAS(e, "nul.model: the piece at byte offset");
  EXPECT_HAS(e, "holds a NUL byte at its byte 0");
  e = spm_error(model + field(1, field(1, "\xFF")), "utf8.model");
  EXPECT_HAS(e, "invalid UTF-8 at byte offset 0 (bytes 0xFF)");
}

TEST(HostileTokenizer, DeepJsonAndDeepSequencesAreErrors) {
  // #3: 300,000 levels overflowed the stack; a Sequence 100,000 deep too.
  std::string e = load_error(std::string(300000, '['), "deep.json");
  EXPECT_HAS(e, "deep.json: not valid JSON here: at byte offset 128: arrays and objects nested more than 128 deep");
  std::string deep;  // written as text: building it as a json would recurse in the test itself
  for (int i = 0; i < 100000; i++) deep += R"({"type": "Sequence", "normalizers": [)";
  deep += R"({"type": "Strip", "strip_left": true, "strip_right": true})";
  for (int i = 0; i < 100000; i++) deep += "]}";
  e = load_error(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0]]}, "normalizer": )" + deep + "}",
                 "seq.json");
  EXPECT_HAS(e, "seq.json: not valid JSON here: at byte offset");
  // 40 levels of Sequence are well within the cap and work.
  json ok = {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}};
  for (int i = 0; i < 40; i++) ok = {{"type", "Sequence"}, {"normalizers", json::array({ok})}};
  text::HfTokenizerJson t(tokenizer_json(ok).dump(), "ok.json");
  std::vector<int32_t> ids;
  ASSERT_TRUE(t.encode("  ab  ", ids).ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{2, 1}));
}

TEST(HostileTokenizer, GrowthBombsAreBounded) {
  // #7: 26 doubling Replace steps took 4.7 GB and then SIGABRT, for every text.
  json seq = json::array();
  for (int i = 0; i < 26; i++) seq.push_back({{"type", "Replace"}, {"pattern", {{"String", "a"}}}, {"content", "aa"}});
  text::HfTokenizerJson doubling(tokenizer_json({{"type", "Sequence"}, {"normalizers", seq}}).dump(), "double.json");
  std::vector<int32_t> ids;
  Status st = doubling.encode(std::string(1000, 'a'), ids);
  ASSERT_FALSE(st.ok());
  EXPECT_HAS(st.error(), "the tokenizer's normalizer made");
  EXPECT_HAS(st.error(), "bytes of a 1000-byte text, over the cap of 16 x its bytes + 4096");
  EXPECT_TRUE(doubling.encode("b", ids).ok());  // short texts still fit under the slack
  // ... and through the tokenizer a server calls: an error for that text, never an abort.
  const std::string path = test::temp_path("double.json");
  test::write_all(path, tokenizer_json({{"type", "Sequence"}, {"normalizers", seq}}).dump());
  auto tok = SentencePieceTokenizer::load(path);
  std::vector<int32_t> row(16);
  EXPECT_FALSE(tok.tokenize(std::string(1000, 'a'), row).ok());
  // A 900 KB Metaspace replacement (10 s a text) and a 1 MB Prepend (716 MB a text): at load.
  std::string e = load_error(
      tokenizer_json(nullptr, {{"type", "Metaspace"}, {"replacement", std::string(900000, 'x')}}).dump(), "m.json");
  EXPECT_HAS(e, "m.json: pre_tokenizer.replacement has 900000 bytes, over the cap of 64 on a normalizer's literals");
  e = load_error(tokenizer_json(nullptr, {{"type", "Metaspace"}, {"replacement", "xy"}}).dump(), "m2.json");
  EXPECT_HAS(e, "m2.json: pre_tokenizer.replacement must be one character");
  e = load_error(tokenizer_json({{"type", "Prepend"}, {"prepend", std::string(1 << 20, 'x')}}).dump(), "p.json");
  EXPECT_HAS(e, "p.json: normalizer.prepend has 1048576 bytes, over the cap of 64");
  json many = json::array();
  for (int i = 0; i < 65; i++) many.push_back({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}});
  e = load_error(tokenizer_json({{"type", "Sequence"}, {"normalizers", many}}).dump(), "many.json");
  EXPECT_HAS(e, "many.json: normalizer.normalizers[64]: more than 64 normalizers");
}

TEST(HostileTokenizer, ErrorsNameTheFileAndKeyNotTheLibrary) {
  // #13: "stoi", a bare number overflow, a raw 0xFF byte echoed back.
  std::string e = load_error(
      tokenizer_json({{"type", "Replace"}, {"pattern", {{"Regex", " {99999999999,}"}}}, {"content", " "}}).dump(),
      "re.json");
  EXPECT_HAS(e, "re.json: normalizer.pattern {\"Regex\":\" {99999999999,}\"} is not supported");
  EXPECT_EQ(e.find("stoi"), std::string::npos) << e;
  e = load_error(R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 1e400]]}})", "score.json");
  EXPECT_HAS(e, "score.json: not valid JSON: at byte offset 63: number overflow parsing '1e400'");
  e = load_error("{\"model\": \xFF}", "ff.json");
  EXPECT_HAS(e, "ff.json: not valid JSON: at byte offset 10: parse error at line 1, column 11: syntax error");
  EXPECT_EQ(e.find('\xFF'), std::string::npos) << e;
  // #15: unk_id 2^32 + 2 was read as 2.
  json j = tokenizer_json(nullptr);
  j["model"]["unk_id"] = (uint64_t(1) << 32) + 2;
  e = load_error(j.dump(), "unk.json");
  EXPECT_HAS(e, "unk.json: model.unk_id must be an integer from -2147483648 to 2147483647, got 4294967298");
  j = tokenizer_json(nullptr);
  j["added_tokens"] = {{{"content", "<x>"}, {"id", -(int64_t(1) << 40)}}};
  e = load_error(j.dump(), "added.json");
  EXPECT_HAS(e, "added.json: added_tokens[].id must be an integer");
}

}  // namespace
}  // namespace oc
