// The WordPiece tokenizer of the -CLIPA configs (src/text/wordpiece.h): hand-checked vectors on
// a tiny vocabulary written here, row layout (truncation, padding, strip_sep_token), vocabulary
// errors, invalid UTF-8, and a few thousand generated texts against the independent Python
// reference (tests/reference/wordpiece_ref.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "text/clean.h"
#include "text/text_tokenizer.h"
#include "text/wordpiece.h"
#include "text_test_util.h"

namespace oc {
namespace {

using nlohmann::json;
using Ids = std::vector<int32_t>;

// id = line: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then the tokens below.
const std::vector<std::string> kTiny = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a",    "photo", "of",  "dog",  "un",   "##aff", "##able",  // 0-11
    "unaff", "##a",   "##ff",  ",",     "!",     ".",    "cafe",  "中",  "文",   "σ",    "ο",     "##δ",     // 12-23
    "##ο",   "##σ",   "##ς",   "ς",     "i",     "ss",   "ß",     "¿",   "«",    "»",    "x",     "##x",     // 24-35
    "[",     "]",     "sep",   "\u1112", "##\u1161", "##\u11AB", "k", "a", "play", "##ing"};          // 36-45

std::string write_vocab(const std::string& name, const std::vector<std::string>& lines, const std::string& tail = "\n") {
  std::string path = test::temp_path(name), data;
  for (size_t i = 0; i < lines.size(); i++) data += lines[i] + (i + 1 < lines.size() ? "\n" : tail);
  test::write_all(path, data);
  return path;
}

const WordPieceTokenizer& tiny() {
  static const WordPieceTokenizer t = WordPieceTokenizer::load(write_vocab("tiny_vocab.txt", kTiny));
  return t;
}

Ids enc(std::string_view s) {
  auto r = tiny().encode(s);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? r.value() : Ids{};
}

Ids row(std::string_view s, size_t n, bool strip_sep) {
  Ids out(n, -7);
  Status st = tiny().tokenize(s, out, strip_sep);
  EXPECT_TRUE(st.ok()) << st.error();
  return out;
}

TEST(WordPiece, LoadsVocabulary) {
  EXPECT_EQ(tiny().vocab_size(), int32_t(kTiny.size()));
  EXPECT_EQ(tiny().pad_id(), 0);
  EXPECT_EQ(tiny().unk_id(), 1);
  EXPECT_EQ(tiny().cls_id(), 2);
  EXPECT_EQ(tiny().sep_id(), 3);
  // \r\n line ends, trailing blanks and no final newline give the same ids; a duplicate's
  // later line wins (id 43 for "a"), as tokenizers' read_file.
  std::string data;
  for (const auto& t : kTiny) data += t + " \r\n";
  data.resize(data.size() - 2);
  std::string p = test::temp_path("tiny_crlf.txt");
  test::write_all(p, data);
  WordPieceTokenizer t = WordPieceTokenizer::load(p);
  EXPECT_EQ(t.vocab_size(), int32_t(kTiny.size()));
  EXPECT_EQ(t.encode("a photo").value(), (Ids{43, 6}));
}

TEST(WordPiece, HandCheckedVectors) {
  EXPECT_EQ(enc("a photo of a dog"), (Ids{43, 6, 7, 43, 8}));
  EXPECT_EQ(enc("A PHOTO Of"), (Ids{43, 6, 7}));                 // lower-cased
  EXPECT_EQ(enc("unaffable"), (Ids{12, 11}));                    // longest first: unaff + ##able
  EXPECT_EQ(enc("unaffaff"), (Ids{12, 10}));                     // unaff + ##aff
  EXPECT_EQ(enc("unaffx"), (Ids{12, 35}));
  EXPECT_EQ(enc("unaffy"), (Ids{1}));                            // no piece for y: whole word [UNK]
  EXPECT_EQ(enc("dog, photo!"), (Ids{8, 15, 6, 16}));            // punctuation is a word
  EXPECT_EQ(enc("dog,,photo"), (Ids{8, 15, 15, 6}));
  EXPECT_EQ(enc("Café"), (Ids{18}));                             // accent stripped (NFD, Mn dropped)
  EXPECT_EQ(enc("cafe\u0301"), (Ids{18}));
  EXPECT_EQ(enc("中文"), (Ids{19, 20}));                         // spaces around CJK ideographs
  EXPECT_EQ(enc("x中x"), (Ids{34, 19, 34}));
  EXPECT_EQ(enc("ΟΔΟΣ"), (Ids{22, 23, 24, 25}));                 // per-character lower: σ, never ς
  EXPECT_EQ(enc("οδος"), (Ids{22, 23, 24, 26}));                 // an explicit ς stays
  EXPECT_EQ(enc("İ"), (Ids{28}));                                // NFD I + U+0307, mark dropped
  EXPECT_EQ(enc("ẞ"), (Ids{30}));                                // lower-case of capital sharp s
  EXPECT_EQ(enc("\u212A"), (Ids{42}));                           // Kelvin sign: NFD K, lower k
  EXPECT_EQ(enc("한"), (Ids{39, 40, 41}));                       // Hangul syllable -> jamo
  EXPECT_EQ(enc("¿dog? «a»"), (Ids{31, 8, 1, 32, 43, 33}));      // '?' not in vocab -> [UNK]
  EXPECT_EQ(enc("dog\u200bdog"), (Ids{1}));                      // U+200B (Cf) dropped: "dogdog" -> [UNK]
  EXPECT_EQ(enc("dog\u2003dog"), (Ids{8, 8}));                   // em space: whitespace
  EXPECT_EQ(enc("dog\u0378"), (Ids{1}));                         // unassigned (Cn) is kept: [UNK]
  EXPECT_EQ(enc("\u0301"), (Ids{}));                             // a lone mark vanishes
  EXPECT_EQ(enc("playing"), (Ids{44, 45}));
  EXPECT_EQ(enc(""), (Ids{}));
  EXPECT_EQ(enc("  \t\n "), (Ids{}));
}

TEST(WordPiece, SpecialTokensInText) {
  EXPECT_EQ(enc("a [SEP] dog"), (Ids{43, 3, 8}));
  EXPECT_EQ(enc("a[MASK]dog"), (Ids{43, 4, 8}));
  EXPECT_EQ(enc("[sep]"), (Ids{36, 38, 37}));   // not verbatim: ordinary text
  EXPECT_EQ(enc("[[SEP]]"), (Ids{36, 3, 37}));
  EXPECT_EQ(enc("[SEP"), (Ids{36, 38}));
  EXPECT_EQ(row("a [SEP] dog", 8, true), (Ids{2, 43, 0, 8, 0, 0, 0, 0}));
  EXPECT_EQ(row("a [SEP] dog", 8, false), (Ids{2, 43, 3, 8, 3, 0, 0, 0}));
}

TEST(WordPiece, LongWords) {
  EXPECT_EQ(enc(std::string(100, 'x')).size(), 100u);  // x ##x ##x ...
  EXPECT_EQ(enc(std::string(101, 'x')), (Ids{1}));       // over 100 characters: [UNK]
  // The limit counts characters after normalization: 200 code points, 100 once marks are gone.
  std::string x;
  for (int i = 0; i < 100; i++) x += "x\u0301";
  EXPECT_EQ(enc(x).size(), 100u);
  EXPECT_EQ(enc(x + "x\u0301"), (Ids{1}));
}

TEST(WordPiece, RowsTruncatePadAndStripSep) {
  EXPECT_EQ(row("a dog", 6, false), (Ids{2, 43, 8, 3, 0, 0}));
  EXPECT_EQ(row("a dog", 6, true), (Ids{2, 43, 8, 0, 0, 0}));
  EXPECT_EQ(row("", 4, false), (Ids{2, 3, 0, 0}));
  EXPECT_EQ(row("a dog of a photo", 4, false), (Ids{2, 43, 8, 3}));  // [CLS] first, [SEP] last
  EXPECT_EQ(row("a dog of a photo", 4, true), (Ids{2, 43, 8, 0}));
  EXPECT_EQ(row("a dog", 2, false), (Ids{2, 3}));
  EXPECT_EQ(row("a dog", 4, false), (Ids{2, 43, 8, 3}));  // exactly full
  // Padding is [PAD]'s id, the stripped [SEP] is 0: a vocabulary with [PAD] elsewhere shows both.
  std::vector<std::string> v = {"[UNK]", "[CLS]", "[SEP]", "[PAD]", "a"};
  WordPieceTokenizer t = WordPieceTokenizer::load(write_vocab("pad3.txt", v));
  Ids out(5);
  ASSERT_TRUE(t.tokenize("a", out, true).ok());
  EXPECT_EQ(out, (Ids{1, 4, 0, 3, 3}));
  std::vector<int32_t> one(1);
  EXPECT_THROW((void)tiny().tokenize("a", one, false), Error);
}

TEST(WordPiece, InvalidUtf8IsAnErrorWithTheOffset) {
  Ids out(8, 5);
  Status st = tiny().tokenize("dog \xC3\x28 x", out, true);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("invalid UTF-8 at byte offset 4"), std::string::npos) << st.error();
  EXPECT_EQ(out, Ids(8, 0));
  EXPECT_FALSE(tiny().encode("\xED\xA0\x80").ok());   // surrogate
  EXPECT_FALSE(tiny().encode("a\xF4\x90\x80\x80").ok());  // > U+10FFFF
  EXPECT_FALSE(tiny().encode("\xC0\xAF").ok());       // overlong
  // In a batch the row is the empty text's and the index is reported.
  auto tok = make_text_tokenizer("bert-base-uncased", true, 6, write_vocab("tiny_b.txt", kTiny));
  std::vector<std::string> texts = {"a dog", "bad \xFF", "photo"};
  std::vector<size_t> bad;
  Ids rows = tok->tokenize_batch(texts, &bad);
  EXPECT_EQ(bad, (std::vector<size_t>{1}));
  EXPECT_EQ(rows, (Ids{2, 43, 8, 0, 0, 0, 2, 0, 0, 0, 0, 0, 2, 6, 0, 0, 0, 0}));
}

TEST(WordPiece, CleaningIsOpenClipsWhitespaceClean) {
  // ftfy + html.unescape twice + whitespace collapsed, without lower(): BERT lower-cases.
  EXPECT_EQ(enc("&amp;lt;a&gt;"), enc("<a>"));
  text::CleanScratch s;
  std::string out;
  ASSERT_TRUE(text::clean_whitespace("  A\u00a0 B&amp;C\n", out, s).ok());
  EXPECT_EQ(out, "A B&C");
  ASSERT_TRUE(text::clean_whitespace("Ab  Cd ", out, s).ok());
  EXPECT_EQ(out, "Ab Cd");
  EXPECT_EQ(enc("\uff24\uff4f\uff47"), (Ids{8}));  // ftfy's width fix: full-width "Ｄｏｇ" -> "Dog"
}

TEST(WordPiece, VocabularyErrors) {
  std::string missing = test::temp_path("no_such_dir/vocab.txt");
  try {
    WordPieceTokenizer::find_vocab("bert-base-uncased", missing);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(missing), std::string::npos) << m;
    EXPECT_NE(m.find("hf_tokenizer_name"), std::string::npos) << m;
    EXPECT_NE(m.find("bert-base-uncased-vocab.txt"), std::string::npos) << m;
    EXPECT_NE(m.find("--hf-tokenizer-vocab"), std::string::npos) << m;
  }
  // Nothing given: every folder searched is named (unless a real vocabulary is installed in
  // the build's data folder, which is searched too).
  const char* old_dir = std::getenv("OPENCLIP_DATA_DIR");
  const std::string old = old_dir ? old_dir : "";
  ::unsetenv("OPENCLIP_HF_TOKENIZER_VOCAB");
  ::setenv("OPENCLIP_DATA_DIR", test::temp_path("empty_data_dir").c_str(), 1);
  try {
    std::string found = WordPieceTokenizer::find_vocab("bert-base-uncased");
    std::printf("a vocabulary is installed at %s: message check skipped\n", found.c_str());
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(test::temp_path("empty_data_dir") + "/bert-base-uncased-vocab.txt"), std::string::npos) << m;
    EXPECT_NE(m.find(test::temp_path("empty_data_dir") + "/bert-base-uncased/vocab.txt"), std::string::npos) << m;
    EXPECT_NE(m.find("OPENCLIP_HF_TOKENIZER_VOCAB"), std::string::npos) << m;
  }
  // Found in a data folder under the expected name.
  std::string dir = test::temp_path("data_dir_with_vocab");
  std::system(("mkdir -p " + test::shell_quote(dir)).c_str());
  write_vocab("data_dir_with_vocab/bert-base-uncased-vocab.txt", kTiny);
  ::setenv("OPENCLIP_DATA_DIR", dir.c_str(), 1);
  EXPECT_EQ(WordPieceTokenizer::find_vocab("bert-base-uncased"), dir + "/bert-base-uncased-vocab.txt");
  if (old_dir) ::setenv("OPENCLIP_DATA_DIR", old.c_str(), 1);
  else ::unsetenv("OPENCLIP_DATA_DIR");

  EXPECT_THROW(WordPieceTokenizer::load(write_vocab("no_cls.txt", {"[PAD]", "[UNK]", "[SEP]", "a"})), Error);
  EXPECT_THROW(WordPieceTokenizer::load(write_vocab("bad_utf8.txt", {"[PAD]", "[UNK]", "\xFF", "[CLS]", "[SEP]"})),
               Error);
  EXPECT_THROW(WordPieceTokenizer::load(missing), Error);
}

TEST(WordPiece, TokenizerSelection) {
  const std::string vocab = write_vocab("tiny_sel.txt", kTiny);
  auto w = make_text_tokenizer("bert-base-uncased", true, 32, vocab);
  EXPECT_EQ(w->name(), "bert-base-uncased");
  EXPECT_EQ(w->context_length(), 32);
  Ids r(32);
  ASSERT_TRUE(w->tokenize("a dog", r).ok());
  EXPECT_EQ(Ids(r.begin(), r.begin() + 5), (Ids{2, 43, 8, 0, 0}));
  EXPECT_EQ(w->decode(Ids{2, 12, 11, 15, 8, 0, 0}), "unaffable , dog");
  EXPECT_THROW(make_text_tokenizer("roberta-base", false, 32, vocab), Error);
  EXPECT_THROW(make_text_tokenizer("bert-base-uncased", false, 1, vocab), Error);
  EXPECT_THROW(make_text_tokenizer("", true, 77, ""), Error);  // strip_sep_token needs a HF tokenizer

  const std::string clipa = R"({"embed_dim": 768, "text_cfg": {"context_length": 32, "vocab_size": 32000,
      "hf_tokenizer_name": "bert-base-uncased", "tokenizer_kwargs": {"strip_sep_token": true}, "width": 768}})";
  TextTokenizerSpec spec = text_tokenizer_spec_from_config(clipa, "ViT-L-14-CLIPA.json");
  EXPECT_EQ(spec.hf_tokenizer_name, "bert-base-uncased");
  EXPECT_TRUE(spec.strip_sep_token);
  EXPECT_EQ(spec.context_length, 32);
  TextTokenizerSpec plain = text_tokenizer_spec_from_config(R"({"text_cfg": {"width": 512}})", "x.json");
  EXPECT_EQ(plain.hf_tokenizer_name, "");
  EXPECT_EQ(plain.context_length, 77);
  try {
    text_tokenizer_spec_from_config(R"({"text_cfg": {"tokenizer_kwargs": {"language": "en"}}})", "m.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_kwargs.language"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
  }
}

std::string ids_str(const Ids& v) {
  std::string s;
  for (int32_t x : v) s += " " + std::to_string(x);
  return s;
}

// OC_WORDPIECE_CORPUS=COUNT:SEED runs a bigger or different corpus by hand (default 3000:1).
TEST(WordPieceReference, CorpusMatchesPython) {
  if (!test::have_python_regex()) GTEST_SKIP() << "/usr/bin/python3 with the regex module is missing";
  const std::string script = std::string(OPENCLIP_TEST_DIR) + "/reference/wordpiece_ref.py";
  const std::string vocab = test::temp_path("wp_ref_vocab.txt"), out = test::temp_path("wp_corpus.jsonl");
  size_t count = 3000, seed = 1;
  if (const char* e = std::getenv("OC_WORDPIECE_CORPUS")) std::sscanf(e, "%zu:%zu", &count, &seed);
  std::string py = std::string(test::kPython) + " " + script;
  std::string cmd = py + " vocab --out " + test::shell_quote(vocab) + " && " + py + " corpus --vocab " +
                    test::shell_quote(vocab) + " --count " + std::to_string(count) + " --seed " + std::to_string(seed) +
                    " --out " + test::shell_quote(out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto rows = test::read_jsonl(out);
  ASSERT_EQ(rows.size(), count);
  WordPieceTokenizer tok = WordPieceTokenizer::load(vocab);

  int bad_clean = 0, bad_words = 0, bad_ids = 0, bad_rows = 0, truncated = 0, unk = 0, non_ascii = 0;
  text::CleanScratch scratch;
  std::vector<std::string> words;
  for (size_t i = 0; i < rows.size(); i++) {
    const std::string text = rows[i]["text"], want_clean = rows[i]["clean"];
    const auto want_words = rows[i]["words"].get<std::vector<std::string>>();
    const Ids want = rows[i]["ids"].get<Ids>(), want32 = rows[i]["row32"].get<Ids>(), want8 = rows[i]["row8"].get<Ids>();
    for (unsigned char c : text) non_ascii += c >= 0x80;
    truncated += want.size() > 30;
    unk += std::find(want.begin(), want.end(), tok.unk_id()) != want.end();
    std::string clean;
    ASSERT_TRUE(text::clean_whitespace(text, clean, scratch).ok());
    if (clean != want_clean && ++bad_clean <= 10)
      ADD_FAILURE() << "text " << i << " " << json(text).dump() << "\n  clean C++ " << json(clean).dump()
                    << "\n  clean Py  " << json(want_clean).dump();
    text::bert_pre_tokenize(want_clean, words);
    if (words != want_words && ++bad_words <= 10)
      ADD_FAILURE() << "text " << i << " clean " << json(want_clean).dump() << "\n  words C++ " << json(words).dump()
                    << "\n  words Py  " << json(want_words).dump();
    auto got = tok.encode(text);
    ASSERT_TRUE(got.ok()) << got.error();
    if (got.value() != want && ++bad_ids <= 10)
      ADD_FAILURE() << "text " << i << " " << json(text).dump() << "\n  ids C++" << ids_str(got.value())
                    << "\n  ids Py " << ids_str(want);
    Ids r32(32), r8(8);
    ASSERT_TRUE(tok.tokenize(text, r32, true).ok());
    ASSERT_TRUE(tok.tokenize(text, r8, false).ok());
    if ((r32 != want32 || r8 != want8) && ++bad_rows <= 10)
      ADD_FAILURE() << "text " << i << " rows C++" << ids_str(r32) << " |" << ids_str(r8) << "\n  rows Py "
                    << ids_str(want32) << " |" << ids_str(want8);
  }
  EXPECT_EQ(bad_clean, 0);
  EXPECT_EQ(bad_words, 0);
  EXPECT_EQ(bad_ids, 0);
  EXPECT_EQ(bad_rows, 0);
  // The corpus must keep exercising what it was built for.
  EXPECT_GT(truncated, int(count / 20));
  EXPECT_GT(unk, int(count / 10));
  EXPECT_LT(unk, int(count * 2 / 3));
  EXPECT_GT(non_ascii, int(count * 3));
}

}  // namespace
}  // namespace oc
