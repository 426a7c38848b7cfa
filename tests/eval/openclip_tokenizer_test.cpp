// `openclip tokenize` against OpenCLIP 2.24.0's own tokenizer (open_clip.tokenize: its
// SimpleTokenizer with the real ftfy from PyPI), line by line. Mojibake repair (ftfy's
// fix_encoding) is documented as not replicated (docs/TOKENIZER.md): those lines must differ,
// so the documentation stays true.
#include <gtest/gtest.h>

#include <sstream>

#include "core/fs.h"
#include "test_util.h"

namespace oc {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

TEST(OpenClipTokenizer, EqualsOpenClipWithRealFtfy) {
  OC_NEED_OPEN_CLIP();
  const std::vector<std::string> same = {
      "a photo of a cat",
      "Schrödinger's cat \u2014 \u201cquoted\u201d \u2018text\u2019 \u2026 &amp; &lt;b&gt;bold&lt;/b&gt;",
      "emoji \U0001F600\U0001F408 and CJK \u6F22\u5B57 \u304B\u306A",
      "  lots   of\twhitespace  ",
      "\uFB01nancial ligature and full-width \uFF21\uFF22\uFF23 \uFF11\uFF12\uFF13",
      "\u00DCn\u00EFc\u00F6d\u00E9 \u00C0\u00C9\u00CE\u00D5\u00DC \u00F1 \u00DF \u00F8",
      "l'e\u0301te\u0301 a\u0300 Paris, na\u00EFve fa\u00E7ade (decomposed accents)",
      "&EACUTE;cole &eacute;t&eacute; &#233;&#x00e9; &amp;amp;lt;nested&amp;amp;gt; &nbsp;x",
      "control\u0007chars\u200b zero\u00ADwidth \uFEFFbom",
      "a very long caption that goes on and on past the seventy seven token context length of the "
      "clip tokenizer so that truncation keeps the end token in the last position of the row yes",
  };
  const std::vector<std::string> mojibake = {"sch\u00C3\u00B6n caf\u00C3\u00A9", "it\u00E2\u20AC\u2122s"};
  std::string text;
  for (const auto& l : same) text += l + "\n";
  for (const auto& l : mojibake) text += l + "\n";
  const std::string dir = test::fresh_dir("openclip_tokenizer");
  fs::write_atomic(dir + "/in.txt", text);
  auto ref = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/openclip_ref.py tokenize " + dir +
                       "/in.txt 2>/dev/null");
  ASSERT_EQ(ref.status, 0) << ref.out;
  auto ours = test::run(test::openclip() + " tokenize --model ViT-B-32 --input " + dir + "/in.txt");
  ASSERT_EQ(ours.status, 0) << ours.out;
  const auto a = lines_of(ours.out), b = lines_of(ref.out);
  ASSERT_EQ(a.size(), same.size() + mojibake.size()) << ours.out;
  ASSERT_EQ(b.size(), a.size()) << ref.out;
  for (size_t i = 0; i < same.size(); ++i) EXPECT_EQ(a[i], b[i]) << same[i];
  for (size_t i = 0; i < mojibake.size(); ++i)
    EXPECT_NE(a[same.size() + i], b[same.size() + i]) << "ftfy repaired '" << mojibake[i]
                                                      << "' and so do we now: update docs/TOKENIZER.md";
}

}  // namespace
}  // namespace oc
