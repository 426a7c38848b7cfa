// The configs by image tower family and the check of one config (model/model_catalog.h).
#include "model/model_catalog.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/check.h"
#include "core/fs.h"
#include "model/params.h"

namespace oc {
namespace {

TEST(ModelCatalog, EveryBuiltinConfigIsInOneFamily) {
  const std::vector<FamilyConfigs> fams = builtin_configs_by_family();
  size_t n = 0;
  auto family_of = [&](const std::string& name) -> std::string {
    for (const FamilyConfigs& f : fams)
      if (std::find(f.names.begin(), f.names.end(), name) != f.names.end()) return f.family;
    return "";
  };
  for (const FamilyConfigs& f : fams) n += f.names.size();
  EXPECT_EQ(n, builtin_model_names().size());
  EXPECT_EQ(family_of("ViT-B-32"), "OpenCLIP ViT");
  EXPECT_EQ(family_of("ViT-L-14-CLIPA"), "OpenCLIP ViT");
  EXPECT_EQ(family_of("ViT-B-16-SigLIP"), "timm ViT");
  EXPECT_EQ(family_of("RN50"), "ModifiedResNet");
  EXPECT_EQ(family_of("fmnist-RN-S"), "ModifiedResNet");
  EXPECT_EQ(family_of("convnext_base"), "timm ConvNeXt");
  EXPECT_EQ(family_of("convnext_xxlarge_320"), "timm ConvNeXt");
  // README's opening paragraph gives this count (the counts of OpenCLIP's own config files that
  // load come from `openclip models --check` over each release's model_configs folder).
  const std::string readme = fs::read_text(OPENCLIP_SOURCE_DIR "/README.md").value();
  EXPECT_NE(readme.find("model configs (" + std::to_string(n) + " built in;"), std::string::npos) << n;
}

TEST(ModelCatalog, CheckSummarisesWithoutBuilding) {
  const ModelCfg c = load_model_config("ViT-B-32");
  const ConfigSummary s = check_model_config(c);
  EXPECT_EQ(s.params, count_params(c));
  EXPECT_EQ(s.tokenizer, "CLIP BPE");
  const std::string line = summary_line(c, s);
  EXPECT_EQ(line.rfind("ViT-B-32: OpenCLIP ViT image tower (224 px, patch 32, 12 blocks of width 768)", 0), 0u) << line;
  EXPECT_NE(line.find("M parameters"), std::string::npos) << line;
  const ModelCfg rn = load_model_config("RN50");
  EXPECT_NE(summary_line(rn, check_model_config(rn)).find("stages [3, 4, 6, 3], width 64"), std::string::npos);
  const ModelCfg sig = load_model_config("ViT-B-16-SigLIP");
  EXPECT_EQ(check_model_config(sig).tokenizer, sig.text.hf_tokenizer_name);
}

// A config over the parameter cap parses (every number is in range) and is refused by the check.
TEST(ModelCatalog, CheckRefusesAParameterTableOverTheCap) {
  ModelCfg c = load_model_config("ViT-B-32");
  c.vision.width = 65536, c.vision.layers = 1024, c.vision.head_width = 64;
  try {
    check_model_config(c);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("64 GiB cap"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oc
