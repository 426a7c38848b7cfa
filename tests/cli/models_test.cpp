// openclip models [--check FILE|NAME] (src/cli/cmd_models.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "core/fs.h"
#include "test_util.h"

namespace oc::test {
namespace {

TEST(CliModels, ListsTheConfigsByFamily) {
  ::oc::test::Run r = run(openclip() + " models");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* s : {"OpenCLIP ViT (", "timm ViT (", "ModifiedResNet (", "  ViT-B-32\n", "  RN50\n",
                        "  ViT-B-16-SigLIP\n", "built-in configs"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_LT(r.out.find("ModifiedResNet ("), r.out.find("  RN50\n"));
}

TEST(CliModels, ChecksABuiltinName) {
  ::oc::test::Run r = run(openclip() + " models --check ViT-B-32");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("ViT-B-32: OpenCLIP ViT image tower", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
}

TEST(CliModels, RefusesABadConfigNamingTheKey) {
  const std::string d = fresh_dir("cli_models");
  const std::string good = R"({"embed_dim": 64, "vision_cfg": {"image_size": 32, "layers": 2, "width": 64,
      "patch_size": 8, "head_width": 32}, "text_cfg": {"context_length": 16, "vocab_size": 1000, "width": 64,
      "heads": 2, "layers": 2}})";
  fs::write_atomic(d + "/good.json", good);
  ::oc::test::Run ok = run(openclip() + " models --check " + d + "/good.json");
  ASSERT_EQ(ok.status, 0) << ok.out;
  EXPECT_NE(ok.out.find("good: OpenCLIP ViT image tower (32 px, patch 8, 2 blocks of width 64)"), std::string::npos)
      << ok.out;
  struct Bad {
    const char* from;
    const char* to;
    const char* key;  // named in the refusal
  };
  for (const Bad& b :
       {Bad{"\"width\": 64,\n      \"patch_size\"", "\"width\": 64, \"mlp_ratio\": -4,\n      \"patch_size\"",
            "mlp_ratio"},
        Bad{"\"patch_size\": 8", "\"patch_size\": 7", "patch_size"},
        Bad{"\"heads\": 2,", "\"heads\": 2, \"hf_tokenizer_name\": \"no/such-tokenizer\",", "hf_tokenizer_name"},
        Bad{"\"embed_dim\": 64,", "\"embed_dim\": 64, \"no_such_key\": 1,", "no_such_key"}}) {
    std::string text = good;
    const size_t at = text.find(b.from);
    ASSERT_NE(at, std::string::npos) << b.from;
    text.replace(at, std::string(b.from).size(), b.to);
    fs::write_atomic(d + "/bad.json", text);
    ::oc::test::Run r = run(openclip() + " models --check " + d + "/bad.json");
    EXPECT_EQ(r.status, 1) << b.key << "\n" << r.out;
    EXPECT_NE(r.out.find(b.key), std::string::npos) << b.key << "\n" << r.out;
  }
}

}  // namespace
}  // namespace oc::test
