// tokenize() stops once the context is full, also inside one very long word (issue 13: a
// 20 MB caption without spaces took 19.5 s and 622 MB): the ids it keeps must equal the
// first ids of the full, uncut encoding.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/rng.h"
#include "text/tokenizer.h"

namespace oc {
namespace {

std::vector<int32_t> full_then_cut(const Tokenizer& t, const std::string& text, int ctx) {
  auto ids = t.encode(text);
  EXPECT_TRUE(ids.ok()) << ids.error();
  std::vector<int32_t> out(size_t(ctx), 0);
  std::vector<int32_t> all = {49406};  // sot
  all.insert(all.end(), ids->begin(), ids->end());
  all.push_back(49407);  // eot
  if (all.size() > size_t(ctx)) {
    all.resize(size_t(ctx));
    all.back() = 49407;
  }
  std::copy(all.begin(), all.end(), out.begin());
  return out;
}

TEST(LongWord, KeptIdsEqualTheFullEncodings) {
  const Tokenizer t = Tokenizer::load_default();
  Rng rng(7);
  std::vector<std::string> texts;
  texts.push_back(std::string(200000, 'a'));
  std::string ab;
  for (int i = 0; i < 60000; ++i) ab += "ab";
  texts.push_back(ab);
  std::string letters;
  for (int i = 0; i < 150000; ++i) letters += char('a' + rng.below(26));
  texts.push_back(letters);
  std::string words;  // common subwords glued together
  const char* parts[] = {"photo", "cat", "ing", "the", "dog", "tion", "super", "market", "zz", "q"};
  while (words.size() < 150000) words += parts[rng.below(10)];
  texts.push_back("a photo of " + words);
  std::string utf8;  // two-byte characters: the cut must not split one
  while (utf8.size() < 100000) utf8 += rng.below(2) ? "\xc3\xa9" : "\xc3\xa0";
  texts.push_back(utf8);
  for (size_t k = 0; k < texts.size(); ++k) {
    for (int ctx : {77, 5}) {
      std::vector<int32_t> got(static_cast<size_t>(ctx), 0);
      ASSERT_TRUE(t.tokenize(texts[k], got).ok());
      EXPECT_EQ(got, full_then_cut(t, texts[k], ctx)) << "text " << k << " ctx " << ctx;
    }
  }
}

}  // namespace
}  // namespace oc
