// Issue 42 for the demo recipe file: deep JSON (#3) and integers past their type (#15: a
// batch_size of 2^32 + 128 was read as 128, epochs 2^32 + 1 as 1) are errors naming the file,
// before any data is read or written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "test_util.h"

namespace oc::test {
namespace {

nlohmann::json builtin() {
  return nlohmann::json::parse(fs::read_text(OPENCLIP_SOURCE_DIR "/configs/recipes/fmnist-demo.json").value());
}

// `openclip demo --recipe FILE` with `text` as FILE: its output (the run must fail).
std::string demo_error(const std::string& dir, const std::string& text) {
  const std::string file = dir + "/r.json";
  fs::write_atomic(file, text);
  auto r = run(openclip() + " demo --recipe '" + file + "' --out '" + dir + "/out' --no-report");
  EXPECT_EQ(r.status, 1) << r.out;
  return r.out;
}

TEST(DemoRecipeHostile, IntegersPastTheirTypeAreRefused) {
  const std::string dir = fresh_dir("demo_recipe_hostile");
  auto j = builtin();
  j["batch_size"] = (uint64_t(1) << 32) + 128;
  std::string e = demo_error(dir, j.dump());
  EXPECT_NE(e.find(dir + "/r.json: \"batch_size\" must be an integer from -2147483648 to 2147483647, got 4294967424"),
            std::string::npos)
      << e;
  j = builtin();
  j["epochs"] = (uint64_t(1) << 32) + 1;
  e = demo_error(dir, j.dump());
  EXPECT_NE(e.find(dir + "/r.json: \"epochs\" must be an integer"), std::string::npos) << e;
}

TEST(DemoRecipeHostile, DeepJsonIsAnError) {
  const std::string dir = fresh_dir("demo_recipe_deep");
  const std::string e = demo_error(dir, R"({"name": )" + std::string(300000, '[') + std::string(300000, ']') + "}");
  EXPECT_NE(e.find("r.json: not valid JSON here: at byte offset 136: arrays and objects nested more than 128 deep"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace oc::test
