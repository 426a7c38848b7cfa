// `openclip tokenize`: one id line per text line, --decode back, bad lines reported by number.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "text/clean.h"
#include "text/tokenizer.h"
#include "text_test_util.h"

namespace oc {
namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) out.push_back(l);
  return out;
}

int run(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(CliTokenize, RoundTripAndBadLines) {
  const std::string vocab = Tokenizer::find_vocab();
  const std::vector<std::string> lines = {"a photo of a tench.", "Hello, World!", "bad \xC3( utf-8", "",
                                          "Ünïcödé café 東京タワー 🐶", "don't &amp; won't", "the end"};
  std::string text;
  for (auto& l : lines) text += l + "\n";
  const std::string in = test::temp_path("cli_in.txt"), ids = test::temp_path("cli_ids.txt"),
                    dec = test::temp_path("cli_dec.txt"), err = test::temp_path("cli_err.txt");
  test::write_all(in, text);
  const std::string bin = OPENCLIP_BINARY;
  int rc = run(bin + " tokenize --vocab " + test::shell_quote(vocab) + " --input " + test::shell_quote(in) + " > " +
               test::shell_quote(ids) + " 2> " + test::shell_quote(err));
  EXPECT_EQ(rc, 1);  // one bad line
  std::string errs = test::read_all(err);
  EXPECT_NE(errs.find("line 3: invalid UTF-8 at byte offset 4"), std::string::npos) << errs;
  auto id_lines = split_lines(test::read_all(ids));
  ASSERT_EQ(id_lines.size(), lines.size());
  EXPECT_EQ(id_lines[2], "");
  for (size_t i = 0; i < lines.size(); i++) {
    if (i == 2) continue;
    std::vector<int32_t> want(77);
    ASSERT_TRUE(test::tokenizer().tokenize(lines[i], want).ok());
    std::string w;
    for (size_t k = 0; k < want.size(); k++) w += (k ? " " : "") + std::to_string(want[k]);
    EXPECT_EQ(id_lines[i], w) << i;
  }

  // Decode (the empty line decodes to an empty line).
  rc = run(bin + " tokenize --decode --vocab " + test::shell_quote(vocab) + " --input " + test::shell_quote(ids) + " > " +
           test::shell_quote(dec) + " 2> " + test::shell_quote(err));
  EXPECT_EQ(rc, 0) << test::read_all(err);
  auto dec_lines = split_lines(test::read_all(dec));
  ASSERT_EQ(dec_lines.size(), lines.size());
  EXPECT_EQ(dec_lines[0], "a photo of a tench .");
  EXPECT_EQ(dec_lines[1], "hello , world !");
  EXPECT_EQ(dec_lines[2], "");
  EXPECT_EQ(dec_lines[5], "don 't & won 't");  // "'t" is its own pre-token
  for (size_t i = 0; i < lines.size(); i++) {  // cleaned text, up to spaces around pre-tokens
    if (i == 2) continue;
    std::string clean;
    text::CleanScratch s;
    ASSERT_TRUE(text::clean_lower(lines[i], clean, s).ok());
    std::string a, b;
    for (char c : dec_lines[i])
      if (c != ' ') a += c;
    for (char c : clean)
      if (c != ' ') b += c;
    EXPECT_EQ(a, b) << i;
  }

  // Bad id lines are reported and the rest still decoded.
  test::write_all(in, "49406 320 1929 49407\n49406 99999\nabc\n320\n");
  rc = run(bin + " tokenize --decode --vocab " + test::shell_quote(vocab) + " --input " + test::shell_quote(in) + " > " +
           test::shell_quote(dec) + " 2> " + test::shell_quote(err));
  EXPECT_EQ(rc, 1);
  errs = test::read_all(err);
  EXPECT_NE(errs.find("line 2: token id 99999 outside [0, 49408)"), std::string::npos) << errs;
  EXPECT_NE(errs.find("line 3: not a token id"), std::string::npos) << errs;
  EXPECT_EQ(split_lines(test::read_all(dec)), (std::vector<std::string>{"a dog", "", "", "a"}));

  // stdin and --context-length.
  rc = run("printf 'a dog' | " + bin + " tokenize --context-length 5 --vocab " + test::shell_quote(vocab) + " > " +
           test::shell_quote(ids));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(test::read_all(ids), "49406 320 1929 49407 0\n");
}

TEST(CliTokenize, MissingVocabularyExplains) {
  const std::string err = test::temp_path("cli_err2.txt");
  int rc = run("echo hi | " + std::string(OPENCLIP_BINARY) + " tokenize --vocab /nonexistent/v.gz 2> " +
               test::shell_quote(err));
  EXPECT_EQ(rc, 1);
  std::string e = test::read_all(err);
  EXPECT_NE(e.find("scripts/setup.sh"), std::string::npos) << e;
}

}  // namespace
}  // namespace oc
