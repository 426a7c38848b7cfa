// core/json_read.h: the depth cap every JSON reader goes through (issue 42 #3), its error
// messages (#13) and integers read into their own type (#15).
#include "core/json_read.h"

#include <gtest/gtest.h>

namespace oc {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json(text, "x.json");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "parsed: " << text.substr(0, 100);
  return "";
}

TEST(JsonRead, DepthIsCappedBeforeParsing) {
  EXPECT_EQ(json_too_deep("[[1]]", 2), std::string_view::npos);
  EXPECT_EQ(json_too_deep("[[[1]]]", 2), 2u);
  EXPECT_EQ(json_too_deep(R"({"a": [{"b": 1}]})", 3), std::string_view::npos);
  EXPECT_EQ(json_too_deep(R"({"a": [{"b": []}]})", 3), 13u);
  // Brackets in strings, and escaped quotes that do not end them, are not nesting.
  EXPECT_EQ(json_too_deep(R"(["[[[[", "\"[[[[", "\\"])", 1), std::string_view::npos);
  EXPECT_EQ(json_too_deep(R"(["\\", [1]])", 1), 7u);
  // 300,000 levels overflowed the stack of whatever walked the tree (issue 42 #3).
  const std::string deep = std::string(300000, '[') + std::string(300000, ']');
  EXPECT_NE(error_of(deep).find("x.json: not valid JSON here: at byte offset 128: arrays and objects nested more "
                                "than 128 deep"),
            std::string::npos);
  const std::string ok = std::string(kJsonMaxDepth, '[') + std::string(kJsonMaxDepth, ']');
  EXPECT_TRUE(parse_json(ok, "ok").is_array());
}

TEST(JsonRead, ErrorsNameTheFileAndOffsetWithoutEchoingBytes) {
  std::string e = error_of("{\"a\": \xFF}");
  EXPECT_NE(e.find("x.json: not valid JSON: at byte offset 6: parse error at line 1, column 7: syntax error while "
                   "parsing value - invalid literal"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find('\xFF'), std::string::npos) << e;
  e = error_of(R"({"a": [1, 1e400]})");
  EXPECT_NE(e.find("x.json: not valid JSON: at byte offset 10: number overflow parsing '1e400'"), std::string::npos)
      << e;
  e = error_of(R"({"a": 1)");
  EXPECT_NE(e.find("x.json: not valid JSON: at byte offset 7"), std::string::npos) << e;
}

TEST(JsonRead, IntegersAreReadIntoTheirOwnType) {
  auto j = nlohmann::json::parse(R"([4294967298, -1, 2147483647, 2.5, "3", 18446744073709551615])");
  try {
    json_int<int32_t>(j[0], "r.json", "batch_size");
    ADD_FAILURE() << "2^32 + 2 read as an int32";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "r.json: batch_size must be an integer from -2147483648 to 2147483647, got 4294967298");
  }
  EXPECT_EQ(json_int<int32_t>(j[1], "r", "k"), -1);
  EXPECT_EQ(json_int<int32_t>(j[2], "r", "k"), 2147483647);
  EXPECT_THROW(json_int<int32_t>(j[3], "r", "k"), Error);
  EXPECT_THROW(json_int<int32_t>(j[4], "r", "k"), Error);
  EXPECT_THROW(json_int<int64_t>(j[5], "r", "k"), Error);
  EXPECT_THROW(json_int<uint32_t>(j[1], "r", "k"), Error);
  EXPECT_EQ(json_int<uint64_t>(j[5], "r", "k"), UINT64_MAX);
  EXPECT_EQ(json_int<int64_t>(j[0], "r", "k"), 4294967298);
}

}  // namespace
}  // namespace oc
