#include "core/options.h"

#include <gtest/gtest.h>

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
