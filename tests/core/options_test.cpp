#include "core/options.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/check.h"

namespace oc {
namespace {

Options make() {
  return Options("train", "test",
                 {{"lr", OptType::Float, "", "learning rate"},
                  {"batch-size", OptType::Int, "64", "batch"},
                  {"train-data", OptType::String, "", "data"},
                  {"image-mean", OptType::List, "", "mean"},
                  {"local-loss", OptType::Flag, "", "local"},
                  {"horovod", OptType::Flag, "", "hvd", "Horovod is not supported; use mpirun"}});
}

TEST(Options, ParsesOpenClipSpellings) {
  Options o = make();
  o.parse({"--lr", "1e-3", "--batch-size=32", "--train_data", "a/{0..1}.tar", "--image-mean", "0.1", "0.2", "0.3",
           "--local-loss"});
  EXPECT_DOUBLE_EQ(o.get_float("lr"), 1e-3);
  EXPECT_EQ(o.get_int("batch-size"), 32);
  EXPECT_EQ(o.get("train-data"), "a/{0..1}.tar");
  EXPECT_EQ(o.float_list("image-mean").size(), 3u);
  EXPECT_TRUE(o.flag("local-loss"));
  EXPECT_TRUE(o.given("lr"));
  EXPECT_FALSE(o.given("horovod"));
}

TEST(Options, DefaultsAndSettingsTable) {
  Options o = make();
  o.parse({});
  EXPECT_EQ(o.get_int("batch-size"), 64);
  EXPECT_FALSE(o.has("lr"));
  std::string t = o.settings_table();
  EXPECT_NE(t.find("batch_size: 64\n"), std::string::npos);
  EXPECT_NE(t.find("lr: None\n"), std::string::npos);
  EXPECT_NE(t.find("local_loss: False\n"), std::string::npos);
}

TEST(Options, UnknownFlagSuggestsNearest) {
  Options o = make();
  try {
    o.parse({"--batch-sz", "3"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean --batch-size"), std::string::npos) << e.what();
  }
}

TEST(Options, BadValuesAndUnbuiltFlags) {
  EXPECT_THROW(make().parse({"--batch-size", "abc"}), Error);
  EXPECT_THROW(make().parse({"--lr"}), Error);
  EXPECT_THROW(make().parse({"stray"}), Error);
  try {
    make().parse({"--horovod"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not available yet"), std::string::npos);
  }
}

// The typed handlers (issue 22): an Int is checked in its own type (int, or int64 when wide)
// before any range, a Float must be finite, at_most names its reason, plain_name refuses paths.
std::string error_of(std::vector<OptionSpec> specs, const std::vector<std::string>& args) {
  Options o("cmd", "test", std::move(specs));
  try {
    o.parse(args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Options, IntegersAreCheckedInTheirOwnType) {
  OptionSpec n{"n", OptType::Int, "1", "a count"};
  EXPECT_EQ(error_of({n}, {"--n", "2147483647"}), "");
  EXPECT_NE(error_of({n}, {"--n", "2147483648"}).find("--n 2147483648 is out of range: it must be an integer from "
                                                     "-2147483648 to 2147483647"), std::string::npos);
  EXPECT_NE(error_of({n}, {"--n", "-2147483649"}).find("out of range"), std::string::npos);
  EXPECT_NE(error_of({n}, {"--n", "99999999999999999999"}).find("out of range"), std::string::npos);  // past int64
  OptionSpec port{"port", OptType::Int, "8080", "port"};
  port.min = 0, port.max = 65535, port.max_why = "the largest TCP port";
  EXPECT_NE(error_of({port}, {"--port", "4294975488"}).find("must be an integer from 0 to 65535"), std::string::npos);
  EXPECT_NE(error_of({port}, {"--port", "65536"}).find("--port must be <= 65535 (the largest TCP port), got 65536"),
            std::string::npos);
  EXPECT_EQ(error_of({port}, {"--port", "65535"}), "");
  OptionSpec wide{"samples", OptType::Int, "", "samples"};
  wide.wide = true;
  EXPECT_EQ(error_of({wide}, {"--samples", "4294967296"}), "");
  Options o("cmd", "test", {wide});
  o.parse({"--samples", "4294967296"});
  EXPECT_EQ(o.get_int("samples"), int64_t(1) << 32);
  EXPECT_NE(error_of({wide}, {"--samples", "9223372036854775808"}).find("out of range"), std::string::npos);
}

TEST(Options, FloatsMustBeFinite) {
  OptionSpec lr{"lr", OptType::Float, "", "lr"};
  for (const char* bad : {"inf", "-inf", "nan", "1e999"})
    EXPECT_NE(error_of({lr}, {"--lr", bad}).find("--lr takes a finite number"), std::string::npos) << bad;
  EXPECT_EQ(error_of({lr}, {"--lr", "1e-3"}), "");
  Options o("cmd", "test", {{"mean", OptType::List, "", "mean"}});
  o.parse({"--mean", "0.5", "nan"});
  EXPECT_THROW(o.float_list("mean"), Error);
}

TEST(Options, PlainNamesRefusePaths) {
  OptionSpec name{"name", OptType::String, "", "run name"};
  name.plain_name = true;
  for (const char* bad : {"../x", "/abs", ".", "..", "a/b", "a\\b"})
    EXPECT_NE(error_of({name}, {"--name", bad}).find("--name '"), std::string::npos) << bad;
  for (const char* good : {"run-1", "..x", "x..", ".hidden", "2026_12_02-model"})
    EXPECT_EQ(error_of({name}, {"--name", good}), "") << good;
  EXPECT_EQ(why_not_plain_name("ok"), "");
  EXPECT_NE(why_not_plain_name(""), "");
}

TEST(Options, HelpListsEveryFlag) {
  Options o = make();
  o.parse({"--help"});
  EXPECT_TRUE(o.help_requested());
  for (auto& s : o.specs()) EXPECT_NE(o.help().find("--" + s.name), std::string::npos);
}

TEST(EditDistance, Basics) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

}  // namespace
}  // namespace oc
