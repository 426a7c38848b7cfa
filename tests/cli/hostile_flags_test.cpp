// Hostile flags and files on the command line (issue 22, item 6), each through the real
// binary: integers out of their type's range, non-finite floats, thread counts past their
// caps, run names that are paths, a vocabulary that is a gzip bomb or /dev/zero, `help` for
// command groups, and `embed --images DIR` into subfolders. Each case failed (wrapped,
// crashed, hung or wrote elsewhere) before the fix.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "core/fs.h"
#include "test_util.h"
#include "tiny_model_files.h"

namespace oc {
namespace {

using test::run;

// The binary under a 2 GB address-space limit and a 60 s guard: the old behaviour (a runaway
// allocation, a hang) fails the test instead of the machine.
test::Run cli(const std::string& args, const std::string& env = "") {
  return run("ulimit -v 2000000; " + env + " timeout 60 " + test::openclip() + " " + args);
}

// `echo hi | openclip tokenize` with OPENCLIP_VOCAB=vocab ("": the installed one), same limits.
test::Run tokenize_with(const std::string& vocab) {
  return run("ulimit -v 2000000; echo hi | " + (vocab.empty() ? "" : "OPENCLIP_VOCAB='" + vocab + "' ") +
             "timeout 60 " + test::openclip() + " tokenize");
}

std::string installed_vocab() {
  const char* d = std::getenv("OPENCLIP_DATA_DIR");
  return std::string(d && *d ? d : OPENCLIP_TEST_DIR "/../data") + "/bpe_simple_vocab_16e6.txt.gz";
}

void expect_error(const test::Run& r, const std::string& message) {
  EXPECT_TRUE(r.status == 1 || r.status == 2) << "rc " << r.status << ": " << r.out;
  EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
}

TEST(HostileFlags, IntegersAreCheckedInTheirOwnType) {
  const std::string dir = test::fresh_dir("hostile_flags_int");
  // Was: 4294975488 cast to int = 8192, and the server listened there.
  expect_error(cli("serve --model test-tiny --port 4294975488"),
               "--port 4294975488 is out of range: it must be an integer from 0 to 65535");
  // The command is named once (was: "openclip serve: error: openclip serve: --port ...").
  EXPECT_EQ(cli("serve --port x").out, "openclip serve: error: --port takes an integer, got 'x'\n");
  EXPECT_EQ(cli("index build --threads 1").out,
            "openclip index build: error: unknown flag --threads (see openclip index build --help)\n");
  expect_error(cli("serve --model test-tiny --port 70000"), "--port must be <= 65535 (the largest TCP port), got 70000");
  expect_error(cli("serve --model test-tiny --port -1"), "--port must be >= 0");
  // Was: cast to 0, then an internal check deep in the loader.
  expect_error(cli("train --dataset-type synthetic --model test-tiny --batch-size 4294967296 --logs " + dir),
               "--batch-size 4294967296 is out of range: it must be an integer from 1 to 2147483647");
  expect_error(cli("train --seed 99999999999999999999"), "--seed 99999999999999999999 is out of range");
  // Counts that may exceed an int are int64 (wide), still range-checked.
  expect_error(cli("train --train-num-samples 99999999999999999999"), "is out of range");
}

TEST(HostileFlags, NonFiniteFloatsAreRefused) {
  const std::string dir = test::fresh_dir("hostile_flags_float");
  const std::string train = "train --dataset-type synthetic --model test-tiny --train-num-samples 8 --batch-size 4 "
                            "--epochs 1 --workers 0 --logs " + dir;
  // Was: accepted; every step was skipped as non-finite and the run "succeeded" (rc 0).
  expect_error(cli(train + " --lr inf"), "--lr takes a finite number, got 'inf'");
  expect_error(cli(train + " --wd nan"), "--wd takes a finite number, got 'nan'");
  expect_error(cli(train + " --image-mean 0.5 nan 0.5"), "--image-mean takes finite numbers, got 'nan'");
}

TEST(HostileFlags, ThreadCountsAreCappedNamingTheFlagAndTheCap) {
  const std::string dir = test::fresh_dir("hostile_flags_threads");
  const std::string train = "train --dataset-type synthetic --model test-tiny --train-num-samples 8 --batch-size 4 "
                            "--epochs 1 --logs " + dir;
  // Was: a segfault in libgomp.
  expect_error(cli(train + " --threads 100000"),
               "--threads must be <= 1024 (the cap on compute threads), got 100000");
  // Was: "Resource temporarily unavailable", naming nothing.
  expect_error(cli(train + " --workers 100000"), "--workers must be <= 256 (the cap on loader threads), got 100000");
  expect_error(cli("serve --model test-tiny --http-threads 100000"), "--http-threads must be <= 1024");
}

TEST(HostileFlags, RunNamesArePlainNames) {
  const std::string dir = test::fresh_dir("hostile_flags_name");
  const std::string train = "train --dataset-type synthetic --model test-tiny --train-num-samples 8 --batch-size 4 "
                            "--epochs 1 --workers 0 --logs " + dir + "/logs";
  // Was: ../x wrote beside --logs, /abs anywhere, . and .. into --logs itself or its parent.
  for (const std::string& name : std::vector<std::string>{"../x", dir + "/abs", ".", "..", "a/b", "a\\\\b"}) {
    expect_error(cli(train + " --name '" + name + "'"), "--name '");
    EXPECT_FALSE(fs::exists(dir + "/x")) << name;
    EXPECT_FALSE(fs::exists(dir + "/abs")) << name;
    EXPECT_FALSE(fs::exists(dir + "/logs/out.log")) << name;
  }
  expect_error(cli(train + " --name ../x"), "must be a plain name without '/'");
  expect_error(cli("demo --name .."), "is not a name");
}

TEST(HostileFlags, TheVocabularyIsReadThroughTheBoundedReader) {
  const std::string dir = test::fresh_dir("hostile_vocab");
  // Was: read forever (the 2 GB limit above ends it in std::bad_alloc; no limit: out of memory).
  expect_error(tokenize_with("/dev/zero"), "/dev/zero is not a regular file");
  // 200 MiB of zeros in a 200 KB gzip file: inflated only up to the 16 MiB cap.
  ASSERT_EQ(run("head -c 209715200 /dev/zero | gzip -1 > '" + dir + "/bomb.gz'").status, 0);
  expect_error(tokenize_with(dir + "/bomb.gz"), "over the 16 MiB BPE vocabulary cap");
  // A truncated gzip file is a clear error, not a short vocabulary.
  ASSERT_EQ(run("head -c 100000 '" + installed_vocab() + "' > '" + dir + "/cut.gz'").status, 0);
  expect_error(tokenize_with(dir + "/cut.gz"), "cannot read BPE vocabulary");
  // The real one still loads, gzipped and as plain text, with the same ids.
  test::Run ok = tokenize_with("");
  EXPECT_EQ(ok.status, 0) << ok.out;
  ASSERT_EQ(run("gzip -dc '" + installed_vocab() + "' > '" + dir + "/plain.txt'").status, 0);
  test::Run plain = tokenize_with(dir + "/plain.txt");
  EXPECT_EQ(plain.status, 0) << plain.out;
  EXPECT_EQ(plain.out, ok.out);
}

TEST(HostileFlags, HelpWorksForEveryCommandTheUsageLists) {
  test::Run usage = run(test::openclip() + " --help");
  ASSERT_EQ(usage.status, 0) << usage.out;
  const size_t start = usage.out.find("commands:\n");
  ASSERT_NE(start, std::string::npos) << usage.out;
  int n = 0;
  std::istringstream lines(usage.out.substr(start + 10));
  for (std::string line; std::getline(lines, line) && line.rfind("  ", 0) == 0; ++n) {
    const std::string cmd = line.substr(2, line.find(' ', 2) - 2);
    test::Run h = run(test::openclip() + " help " + cmd);
    EXPECT_EQ(h.status, 0) << "openclip help " << cmd << ":\n" << h.out;  // was: "no command" for index, data, ...
    EXPECT_NE(h.out.find("usage: openclip " + cmd), std::string::npos) << h.out;
  }
  EXPECT_GE(n, 14);  // the 14 top-level commands (groups count once)
  test::Run group = run(test::openclip() + " help index");
  EXPECT_NE(group.out.find("usage: openclip index build"), std::string::npos) << group.out;
  EXPECT_NE(group.out.find("usage: openclip index search"), std::string::npos) << group.out;
  EXPECT_EQ(run(test::openclip() + " help nosuch").status, 2);
}

TEST(HostileFlags, EmbedImagesFolderIsRecursive) {
  test::TinyModelFiles f = test::make_tiny_model_files("embed_recursive");
  Rng rng(5);
  for (const char* p : {"/img/a.png", "/img/sub/b.png", "/img/sub/deeper/c.png"}) {
    fs::make_dirs(fs::dirname(f.dir + p));
    fs::write_atomic(f.dir + p, test::random_png(rng, 20, 24));
  }
  test::Run r = run(test::openclip() + " embed --model test-tiny --pretrained " + f.weights + " --images " + f.dir +
                    "/img --out " + f.dir + "/e.npy");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("embed: 3 x "), std::string::npos) << r.out;  // was: 1 (a.png only)
  // A glob, as its help says (was: "no such file").
  test::Run g = run(test::openclip() + " embed --model test-tiny --pretrained " + f.weights + " --images '" + f.dir +
                    "/img/sub/*.png' --out " + f.dir + "/g.npy");
  EXPECT_EQ(g.status, 0) << g.out;
  EXPECT_NE(g.out.find("embed: 1 x "), std::string::npos) << g.out;
}

}  // namespace
}  // namespace oc
