// Every number of a model config is bounded with its key named, and the sizes derived from
// a config (parameters, activations, bytes) are computed with checked arithmetic (issue 22,
// item 1: a negative mlp_ratio cancelling a huge vocab_size sized the parameter arena at
// 263 KB and a 64 MiB copy overflowed it).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "core/check.h"
#include "error_of.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/params.h"
#include "ops/backend.h"

namespace oc {
namespace {

using test::error_of;

// A tiny valid config with `vision` and `text` spliced into its sections.
std::string cfg(const std::string& vision, const std::string& text, const std::string& top = "") {
  return R"({"embed_dim": 8)" + top + R"(, "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 64, "layers": 1)" +
         vision + R"(}, "text_cfg": {"width": 64, "heads": 2, "layers": 1, "vocab_size": 100, "context_length": 8)" +
         text + "}}";
}

std::string parse_error(const std::string& json) {
  return error_of([&] { parse_model_config(json, "bad"); });
}

TEST(ModelConfigSizes, WrappingConfigFromTheIssueIsRefused) {
  // count_params wrapped 2^64 here: (vocab x width) + layers x (a negative MLP block).
  const std::string e = parse_error(cfg("", R"(, "vocab_size": 2147483647, "width": 2048, "heads": 8,
      "mlp_ratio": -1048576.25, "layers": 64)"));
  EXPECT_NE(e.find("text_cfg: \"vocab_size\" must be in [1, 16777216], got 2147483647"), std::string::npos) << e;
}

TEST(ModelConfigSizes, MlpRatioIsBoundedWithTheKeyNamed) {
  for (const char* r : {"-4", "0", "65", "-1e300"}) {
    const std::string e = parse_error(cfg(std::string(R"(, "mlp_ratio": )") + r, ""));
    EXPECT_NE(e.find("bad vision_cfg: \"mlp_ratio\" must be in (0, 64]"), std::string::npos) << r << ": " << e;
    const std::string t = parse_error(cfg("", std::string(R"(, "mlp_ratio": )") + r));
    EXPECT_NE(t.find("bad text_cfg: \"mlp_ratio\" must be in (0, 64]"), std::string::npos) << r << ": " << t;
  }
  const std::string e = parse_error(cfg(R"(, "mlp_ratio": 0.001)", ""));
  EXPECT_NE(e.find("\"mlp_ratio\" 0.001 times width 64 gives an MLP width under 1"), std::string::npos) << e;
  EXPECT_EQ(parse_error(cfg(R"(, "mlp_ratio": 4.9231)", R"(, "mlp_ratio": 0.5)")), "");
}

TEST(ModelConfigSizes, EveryNumberIsBoundedWithTheKeyNamed) {
  struct Case {
    std::string json, expect;
  };
  const std::vector<Case> cases = {
      {cfg(R"(, "width": 1000000000, "head_width": 1000000000)", ""), "vision_cfg: \"width\" must be in [1, 65536], got 1000000000"},
      {cfg("", R"(, "width": 1000000000, "heads": 1)"), "text_cfg: \"width\" must be in [1, 65536]"},
      {cfg("", "", R"(, "embed_dim": 0)"), "bad: \"embed_dim\" must be in [1, 65536], got 0"},
      {cfg(R"(, "layers": 100000)", ""), "vision_cfg: \"layers\" must be in [1, 1024]"},
      {cfg("", R"(, "layers": -1)"), "text_cfg: \"layers\" must be in [1, 1024], got -1"},
      {cfg(R"(, "image_size": 20000)", ""), "\"image_size\" must be in [1, 16384]"},
      {cfg(R"(, "image_size": 4096, "patch_size": 2)", ""), "image_size / patch_size = 2048 is over 256"},
      {cfg(R"(, "patch_size": 64)", ""), "\"patch_size\" must be in [1, 32], got 64"},
      {cfg(R"(, "head_width": 128)", ""), "\"head_width\" must be in [1, 64], got 128"},
      {cfg("", R"(, "heads": 0)"), "text_cfg: \"heads\" must be in [1, 64], got 0"},
      {cfg("", R"(, "context_length": 100000)"), "\"context_length\" must be in [1, 65536]"},
      {cfg("", R"(, "vocab_size": 0)"), "\"vocab_size\" must be in [1, 16777216], got 0"},
      {cfg("", R"(, "pad_id": 100)"), "text_cfg: \"pad_id\" must be in [0, 99], got 100"},
      {cfg("", R"(, "pad_id": -1)"), "\"pad_id\" must be in [0, 99], got -1"},
      {cfg("", R"(, "width": 2.5)"), "text_cfg: \"width\" must be an integer, got 2.5"},
  };
  for (auto& c : cases) {
    const std::string e = parse_error(c.json);
    EXPECT_NE(e.find(c.expect), std::string::npos) << c.json << "\n -> " << e;
  }
}

TEST(ModelConfigSizes, ParameterBytesAreCheckedAndPrintedUnwrapped) {
  // Inside every bound, but 2^24 x 65536 floats of token embedding alone is 4 TiB.
  const ModelCfg c = parse_model_config(cfg("", R"(, "vocab_size": 16777216, "width": 65536, "heads": 1)"), "big");
  const std::string e = error_of([&] { make_param_table(c); });
  EXPECT_NE(e.find("model big parameters: the fp32 parameters needs"), std::string::npos) << e;
  EXPECT_NE(e.find("the 64 GiB cap"), std::string::npos) << e;
  // The byte count is the real one (> 4 TiB), not a wrapped one.
  const size_t at = e.find("needs ") + 6;
  EXPECT_GT(std::stoull(e.substr(at)), uint64_t(4) << 40) << e;
  EXPECT_NE(error_of([&] { count_params(c); }), "");
  // The largest OpenCLIP tower shapes are fine.
  EXPECT_GT(count_params(load_model_config("ViT-B-32")), 150'000'000);
}

TEST(ModelConfigSizes, ActivationSizesAreChecked) {
  // 65537 vision tokens, 64 heads: batch x heads x tokens^2 (the attention matrix) overflows
  // 64 bits at batch 2^22; the plan says so instead of allocating a wrapped size.
  const ModelCfg c =
      parse_model_config(cfg(R"(, "image_size": 16384, "patch_size": 64, "head_width": 1)", ""), "tall");
  Clip clip(c, ops::default_backend());
  const std::string e = error_of([&] { clip.plan_inference(int64_t(1) << 22); });
  EXPECT_NE(e.find("activations: size"), std::string::npos) << e;
  EXPECT_NE(e.find("overflows 64 bits"), std::string::npos) << e;
}

}  // namespace
}  // namespace oc
