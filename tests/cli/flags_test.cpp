// The flag registry (core/flags.h): every command's --help comes from it and lists each of
// its flags once, unknown flags still suggest the nearest, every accepted spelling of
// --precision is in its help, cross-flag rules and per-flag checks fire, and aliases work.
// (The generated docs/CLI.md and README table are checked by the ctest cli_docs_current.)
#include <gtest/gtest.h>

#include <set>

#include "core/check.h"
#include "core/flags.h"
#include "model/precision.h"
#include "test_util.h"

namespace oc {
namespace {

size_t count_lines_starting(const std::string& text, const std::string& prefix) {
  size_t n = 0, p = 0;
  while (p < text.size()) {
    size_t q = text.find('\n', p);
    if (q == std::string::npos) q = text.size();
    std::string line = text.substr(p, q - p);
    n += line.rfind(prefix, 0) == 0;
    p = q + 1;
  }
  return n;
}

TEST(Flags, EveryCommandHelpComesFromTheRegistryAndListsEachFlagOnce) {
  ASSERT_GT(all_flags().size(), 150u);  // building the registry runs its own consistency checks
  for (const CommandInfo& c : command_infos()) {
    Options o = options_for(c.name);
    const std::string help = o.help();
    for (const OptionSpec& s : o.specs())
      EXPECT_EQ(count_lines_starting(help, "  --" + s.name + " "), 1u) << c.name << " --" << s.name;
    // The command's own --help and `openclip help <command>` print exactly this.
    auto r = test::run(test::openclip() + " " + c.name + " --help");
    ASSERT_EQ(r.status, 0) << c.name << ": " << r.out;
    EXPECT_EQ(r.out, help) << c.name;
    auto h = test::run(test::openclip() + " help " + c.name);
    EXPECT_EQ(h.out, help) << c.name;
  }
}

TEST(Flags, SharedFlagsAreDeclaredOnce) {
  std::map<std::string, int> declared;
  for (const Flag& f : all_flags()) ++declared[f.spec.name];
  // Declared once with the commands that take it, even when many commands do.
  for (const char* name : {"precision", "model", "batch-size", "threads", "pretrained", "workers", "seed", "json"})
    EXPECT_EQ(declared[name], 1) << name;
  int precision_commands = 0;
  for (const Flag& f : all_flags())
    if (f.spec.name == "precision") precision_commands = int(f.commands.size());
  EXPECT_GE(precision_commands, 10);
}

TEST(Flags, UnknownFlagSuggestsTheNearest) {
  for (const char* cmd : {"train", "eval", "bench train", "demo", "serve"}) {
    auto r = test::run(test::openclip() + " " + cmd + " --batch-sze 3");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("unknown flag --batch-sze"), std::string::npos) << cmd << ": " << r.out;
    if (std::string(cmd) != "serve") {  // serve has no --batch-size
      EXPECT_NE(r.out.find("did you mean --batch-size?"), std::string::npos) << cmd << ": " << r.out;
    }
  }
}

TEST(Flags, EveryAcceptedPrecisionSpellingIsInItsHelp) {
  // Spellings OpenCLIP knows; the ones parse_precision accepts must all be listed (and
  // accepted by the parser), the ones it refuses must not be offered as choices.
  const std::vector<std::string> spellings = {"amp",       "amp_bf16", "amp_bfloat16", "bf16",
                                              "pure_bf16", "fp32",     "fp16",         "pure_fp16"};
  for (const CommandInfo& c : command_infos()) {
    Options o = options_for(c.name);
    const OptionSpec* p = nullptr;
    for (auto& s : o.specs())
      if (s.name == "precision") p = &s;
    if (!p) continue;
    const std::string help = o.help();
    for (const std::string& s : spellings) {
      bool accepted = true;
      try {
        (void)parse_precision(s);
      } catch (const Error&) {
        accepted = false;
      }
      const bool offered = std::find(p->choices.begin(), p->choices.end(), s) != p->choices.end();
      EXPECT_EQ(accepted, offered) << c.name << " " << s;
      if (accepted) {
        const bool listed = help.find(" " + s + ",") != std::string::npos || help.find(" " + s + ")") != std::string::npos;
        EXPECT_TRUE(listed) << c.name << ": " << s << " missing from\n" << help;
        Options q = options_for(c.name);
        EXPECT_NO_THROW(q.parse({"--precision", s})) << c.name << " " << s;
      }
    }
  }
}

TEST(Flags, ChoicesRangesAndCrossFlagRules) {
  auto error_of = [](const std::string& cmd, const std::vector<std::string>& args) -> std::string {
    Options o = options_for(cmd);
    try {
      o.parse(args);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error_of("train", {"--precision", "fp8"}).find("choose one of amp,"), std::string::npos);
  EXPECT_NE(error_of("train", {"--batch-size", "0"}).find("--batch-size must be >= 1"), std::string::npos);
  EXPECT_NE(error_of("train", {"--train-data-upsampling-factors", "1::2"}).find("--dataset-resampled"),
            std::string::npos);
  EXPECT_EQ(error_of("train", {"--train-data-upsampling-factors", "1::2", "--dataset-resampled"}), "");
  EXPECT_NE(error_of("train", {"--siglip", "--local-loss"}).find("--siglip"), std::string::npos);
  EXPECT_NE(error_of("train", {"--lr-scheduler", "const-cooldown"}).find("--epochs-cooldown"), std::string::npos);
  EXPECT_EQ(error_of("train", {"--lr-scheduler", "const-cooldown", "--epochs-cooldown", "2"}), "");
  // Rules apply to the commands that take all of their flags: eval has the data flags but
  // trains nothing, so the upsampling rule does not concern it.
  EXPECT_EQ(error_of("eval", {"--train-data-upsampling-factors", "1::2"}), "");
}

TEST(Flags, PerCommandDefaults) {
  auto def = [](const std::string& cmd, const std::string& flag) { return options_for(cmd).get(flag); };
  EXPECT_EQ(def("train", "precision"), "amp");
  EXPECT_EQ(def("bench train", "precision"), "amp_bf16");
  EXPECT_EQ(def("eval", "precision"), "fp32");
  EXPECT_EQ(def("demo", "precision"), "");  // the recipe file's (configs/recipes/fmnist-demo.json)
  EXPECT_EQ(def("train", "batch-size"), "64");
  EXPECT_EQ(def("bench train", "batch-size"), "128");
  EXPECT_EQ(def("embed", "batch-size"), "32");
}

TEST(Flags, AliasesParseUnderTheFlagsName) {
  OptionSpec s;
  s.name = "batch-size";
  s.type = OptType::Int;
  s.default_value = "64";
  s.help = "batch";
  s.aliases = {"bs"};
  Options o("x", "test", {s});
  o.parse({"--bs", "8"});
  EXPECT_EQ(o.get_int("batch-size"), 8);
  EXPECT_NE(o.help().find("also --bs"), std::string::npos);
}

TEST(Flags, MarkdownHasEveryCommandAndFlag) {
  const std::string md = cli_markdown();
  for (const CommandInfo& c : command_infos()) {
    EXPECT_NE(md.find("## openclip " + c.name + "\n"), std::string::npos) << c.name;
    const Options o = options_for(c.name);
    for (auto& s : o.specs()) EXPECT_NE(md.find("`--" + s.name), std::string::npos) << s.name;
  }
}

}  // namespace
}  // namespace oc
