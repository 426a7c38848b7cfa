// Issue 42 for the demo recipe file: deep JSON (#3) and integers past their type (#15: a
// batch_size of 2^32 + 128 was read as 128, epochs 2^32 + 1 as 1) are errors naming the file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/demo_recipe.h"
#include "core/check.h"
#include "core/fs.h"

namespace oc::cli {
namespace {

nlohmann::json builtin() {
  return nlohmann::json::parse(fs::read_text(OPENCLIP_SOURCE_DIR "/configs/recipes/fmnist-demo.json").value());
}

std::string error_of(const std::string& text) {
  try {
    parse_demo_recipe(text, "r.json");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "parsed";
  return "";
}

TEST(DemoRecipeHostile, IntegersPastTheirTypeAreRefused) {
  EXPECT_NO_THROW(parse_demo_recipe(builtin().dump(), "r.json"));  // the control
  auto j = builtin();
  j["batch_size"] = (uint64_t(1) << 32) + 128;
  std::string e = error_of(j.dump());
  EXPECT_NE(e.find("r.json: \"batch_size\" must be an integer from -2147483648 to 2147483647, got 4294967424"),
            std::string::npos)
      << e;
  j = builtin();
  j["epochs"] = (uint64_t(1) << 32) + 1;
  e = error_of(j.dump());
  EXPECT_NE(e.find("r.json: \"epochs\" must be an integer"), std::string::npos) << e;
}

TEST(DemoRecipeHostile, DeepJsonIsAnError) {
  const std::string deep = R"({"name": )" + std::string(300000, '[') + std::string(300000, ']') + "}";
  std::string e = error_of(deep);
  EXPECT_NE(e.find("r.json: not valid JSON here: at byte offset 136: arrays and objects nested more than 128 deep"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace oc::cli
