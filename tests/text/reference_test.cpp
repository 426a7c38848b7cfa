// The C++ tokenizer against the independent Python reference (tests/reference/tokenizer_ref.py,
// OpenCLIP's SimpleTokenizer code run by Debian's python3 + regex): a few thousand varied
// captions must give the same cleaned text and exactly the same 77 ids; decode must give the
// same text for arbitrary id sequences.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/clean.h"
#include "text/tokenizer.h"
#include "text_test_util.h"

namespace oc {
namespace {

using nlohmann::json;

std::string escaped(const std::string& s) { return json(s).dump(); }

TEST(Reference, CorpusMatchesPython) {
  if (!test::have_python_regex()) GTEST_SKIP() << "/usr/bin/python3 with the regex module is missing";
  const std::string vocab = Tokenizer::find_vocab();
  const std::string out = test::temp_path("corpus.jsonl");
  // OC_TEXT_CORPUS=COUNT:SEED runs a bigger or different corpus by hand (default 4000:1).
  size_t count = 4000, seed = 1;
  if (const char* e = std::getenv("OC_TEXT_CORPUS")) std::sscanf(e, "%zu:%zu", &count, &seed);
  std::string cmd = std::string(test::kPython) + " " + test::ref_script() + " corpus --count " + std::to_string(count) +
                    " --seed " + std::to_string(seed) + " --vocab " + test::shell_quote(vocab) + " --out " +
                    test::shell_quote(out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto rows = test::read_jsonl(out);
  ASSERT_EQ(rows.size(), count);

  int bad_clean = 0, bad_ids = 0, truncated = 0, non_ascii = 0;
  text::CleanScratch scratch;
  for (size_t i = 0; i < rows.size(); i++) {
    const std::string text = rows[i]["text"];
    const std::string want_clean = rows[i]["clean"];
    const std::vector<int32_t> want = rows[i]["ids"].get<std::vector<int32_t>>();
    for (unsigned char c : text) non_ascii += c >= 0x80;
    truncated += want.back() != 0;
    std::string clean;
    Status cs = text::clean_lower(text, clean, scratch);
    ASSERT_TRUE(cs.ok()) << cs.error();
    if (clean != want_clean && ++bad_clean <= 10)
      ADD_FAILURE() << "caption " << i << " " << escaped(text) << "\n  clean C++ " << escaped(clean)
                    << "\n  clean Py  " << escaped(want_clean);
    std::vector<int32_t> got(77);
    Status st = test::tokenizer().tokenize(text, got);
    ASSERT_TRUE(st.ok()) << st.error();
    if (got != want && ++bad_ids <= 10) {
      std::string g, w;
      for (size_t k = 0; k < 77; k++) g += " " + std::to_string(got[k]), w += " " + std::to_string(want[k]);
      ADD_FAILURE() << "caption " << i << " " << escaped(text) << "\n  ids C++" << g << "\n  ids Py " << w;
    }
  }
  EXPECT_EQ(bad_clean, 0);
  EXPECT_EQ(bad_ids, 0);
  // The corpus must keep exercising what it was built for.
  EXPECT_GT(truncated, int(count / 80));
  EXPECT_GT(non_ascii, int(count * 3));
}

TEST(Reference, DecodeMatchesPython) {
  if (!test::have_python_regex()) GTEST_SKIP() << "/usr/bin/python3 with the regex module is missing";
  const std::string vocab = Tokenizer::find_vocab();
  const std::string in = test::temp_path("decode_in.jsonl"), out = test::temp_path("decode_out.jsonl");
  // Random id sequences, biased to the 512 byte-level ids so that many decode to invalid
  // UTF-8 and exercise errors="replace".
  uint64_t s = 12345;
  auto rnd = [&](uint64_t n) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (s >> 33) % n;
  };
  std::vector<std::vector<int32_t>> seqs;
  std::string lines;
  for (int i = 0; i < 2000; i++) {
    std::vector<int32_t> ids(rnd(12));
    for (auto& id : ids) id = int32_t(rnd(4) ? rnd(512) : rnd(49406));
    seqs.push_back(ids);
    lines += json{{"ids", ids}}.dump() + "\n";
  }
  test::write_all(in, lines);
  std::string cmd = std::string(test::kPython) + " " + test::ref_script() + " decode --vocab " + test::shell_quote(vocab) +
                    " --input " + test::shell_quote(in) + " --out " + test::shell_quote(out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto rows = test::read_jsonl(out);
  ASSERT_EQ(rows.size(), seqs.size());
  int bad = 0;
  for (size_t i = 0; i < seqs.size(); i++) {
    std::string want = rows[i]["text"];
    std::string got = test::tokenizer().decode(seqs[i]);
    if (got != want && ++bad <= 10) ADD_FAILURE() << "sequence " << i << ": C++ " << escaped(got) << " Py " << escaped(want);
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace oc
