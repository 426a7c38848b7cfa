// `openclip tokenize` with the WordPiece tokenizer: --hf-tokenizer / --hf-tokenizer-vocab /
// --strip-sep-token, --model selecting it from a config's text_cfg, --decode, and the errors.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "text/wordpiece.h"
#include "text_test_util.h"

namespace oc {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

int run(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

std::string tiny_vocab() {
  const std::string p = test::temp_path("cli_wp_vocab.txt");
  test::write_all(p, "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\nphoto\nof\ndog\n,\n!\nplay\n##ing\ncafe\n");
  return p;
}

std::string row_text(const WordPieceTokenizer& t, const std::string& s, size_t n, bool strip) {
  std::vector<int32_t> r(n);
  EXPECT_TRUE(t.tokenize(s, r, strip).ok());
  std::string out;
  for (size_t i = 0; i < n; i++) out += (i ? " " : "") + std::to_string(r[i]);
  return out;
}

TEST(CliWordPiece, TokenizeDecodeAndModelConfig) {
  const std::string vocab = tiny_vocab(), bin = OPENCLIP_BINARY;
  const WordPieceTokenizer tok = WordPieceTokenizer::load(vocab);
  const std::vector<std::string> lines = {"A photo of a dog!", "bad \xC3( utf-8", "Playing, CAFÉ", "", "x [SEP] y"};
  std::string text;
  for (auto& l : lines) text += l + "\n";
  const std::string in = test::temp_path("cli_wp_in.txt"), ids = test::temp_path("cli_wp_ids.txt"),
                    dec = test::temp_path("cli_wp_dec.txt"), err = test::temp_path("cli_wp_err.txt");
  test::write_all(in, text);
  const std::string io = " --input " + test::shell_quote(in) + " > " + test::shell_quote(ids) + " 2> " + test::shell_quote(err);
  int rc = run(bin + " tokenize --hf-tokenizer bert-base-uncased --hf-tokenizer-vocab " + test::shell_quote(vocab) +
               " --context-length 8" + io);
  EXPECT_EQ(rc, 1);  // the bad line
  EXPECT_NE(test::read_all(err).find("line 2: invalid UTF-8 at byte offset 4"), std::string::npos) << test::read_all(err);
  auto got = lines_of(test::read_all(ids));
  ASSERT_EQ(got.size(), lines.size());
  EXPECT_EQ(got[0], "2 5 6 7 5 8 10 3");
  EXPECT_EQ(got[1], "");
  for (size_t i : {0, 2, 3, 4}) EXPECT_EQ(got[i], row_text(tok, lines[i], 8, false)) << i;

  // --model: a -CLIPA-style config (context_length 32, strip_sep_token) as a file.
  const std::string cfg = test::temp_path("cli_wp_clipa.json");
  test::write_all(cfg, R"({"embed_dim": 768, "vision_cfg": {"width": 1024}, "text_cfg": {"context_length": 32,
      "vocab_size": 32000, "hf_tokenizer_name": "bert-base-uncased", "tokenizer_kwargs": {"strip_sep_token": true}}})");
  rc = run(bin + " tokenize --model " + test::shell_quote(cfg) + " --hf-tokenizer-vocab " + test::shell_quote(vocab) + io);
  EXPECT_EQ(rc, 1);
  got = lines_of(test::read_all(ids));
  ASSERT_EQ(got.size(), lines.size());
  for (size_t i : {0, 2, 3, 4}) EXPECT_EQ(got[i], row_text(tok, lines[i], 32, true)) << i;

  // The vocabulary from $OPENCLIP_HF_TOKENIZER_VOCAB, then --decode back.
  test::write_all(in, got[0] + "\n" + got[2] + "\n2 99 3\n");
  rc = run("OPENCLIP_HF_TOKENIZER_VOCAB=" + test::shell_quote(vocab) + " " + bin +
           " tokenize --decode --hf-tokenizer bert-base-uncased --input " + test::shell_quote(in) + " > " +
           test::shell_quote(dec) + " 2> " + test::shell_quote(err));
  EXPECT_EQ(rc, 1);
  EXPECT_NE(test::read_all(err).find("line 3: token id 99 outside [0, 14)"), std::string::npos) << test::read_all(err);
  EXPECT_EQ(lines_of(test::read_all(dec)), (std::vector<std::string>{"a photo of a dog !", "playing , cafe", ""}));
}

TEST(CliWordPiece, ErrorsNameTheFix) {
  const std::string bin = OPENCLIP_BINARY, err = test::temp_path("cli_wp_err2.txt"), vocab = tiny_vocab();
  auto fails = [&](const std::string& args, const std::string& want) {
    int rc = run("echo hi | env -u OPENCLIP_HF_TOKENIZER_VOCAB OPENCLIP_DATA_DIR=" +
                 test::shell_quote(test::temp_path("cli_wp_empty")) + " " + bin + " tokenize " + args + " > /dev/null 2> " +
                 test::shell_quote(err));
    EXPECT_EQ(rc, 1) << args;
    std::string e = test::read_all(err);
    EXPECT_NE(e.find(want), std::string::npos) << args << "\n" << e;
    return e;
  };
  // Missing vocabulary (unless one is installed in the build's data folder, searched too).
  std::string e = fails("--hf-tokenizer bert-base-uncased", "bert-base-uncased-vocab.txt");
  if (e.find("not found") != std::string::npos) {
    EXPECT_NE(e.find("hf_tokenizer_name"), std::string::npos) << e;
    EXPECT_NE(e.find(test::temp_path("cli_wp_empty")), std::string::npos) << e;
    EXPECT_NE(e.find("--hf-tokenizer-vocab"), std::string::npos) << e;
  }
  fails("--hf-tokenizer bert-base-uncased --hf-tokenizer-vocab /nonexistent/vocab.txt", "/nonexistent/vocab.txt");
  fails("--hf-tokenizer roberta-base", "only \"bert-base-uncased\"");
  fails("--strip-sep-token", "strip_sep_token");
  fails("--hf-tokenizer bert-base-uncased --vocab x.gz", "--hf-tokenizer-vocab");
  fails("--hf-tokenizer-vocab " + test::shell_quote(vocab), "CLIP's BPE");
  fails("--hf-tokenizer bert-base-uncased --hf-tokenizer-vocab " + test::shell_quote(vocab) + " --context-length 1",
        "at least 2");
  fails("--model no-such-model", "no built-in config");
  fails("--model ViT-B-32 --hf-tokenizer bert-base-uncased", "do not combine");
}

}  // namespace
}  // namespace oc
