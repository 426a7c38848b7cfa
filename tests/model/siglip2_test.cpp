// The SigLIP2 configs (issue 36): OpenCLIP 3.3.0's 15 *SigLIP2* configs are SigLIP's
// architecture (siglip_test.cpp) with timm 1.0's newer vit_*_siglip_* towers, a 256,000-piece
// vocabulary and text_cfg.act_kwargs {"approximate": "tanh"} (the text MLP's GELU with the
// tanh approximation, as the vision towers with timm's act_layer "gelu_tanh"). The forward
// against OpenCLIP + timm at one block is here; full size, training and checkpoints in
// siglip_long_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "core/fs.h"
#include "core/machine.h"
#include "error_of.h"
#include "hub/fake_hub.h"
#include "model/model_catalog.h"
#include "model/model_tokenizer.h"
#include "model/params.h"
#include "model/timm_vit/config_timm.h"
#include "siglip_ref.h"

namespace oc {
namespace {

using test::error_of;

struct Want {
  const char* name;
  const char* timm;
  int image, patch, width, layers, heads, mlp;
  bool vision_tanh;
  int text_width, text_layers, text_mlp;
};

// timm 1.0.22's vision_transformer.py entries; the text sizes from 3.3's JSON.
const Want kWant[] = {
    {"ViT-B-16-SigLIP2", "vit_base_patch16_siglip_224", 224, 16, 768, 12, 12, 3072, false, 768, 12, 3072},
    {"ViT-B-16-SigLIP2-256", "vit_base_patch16_siglip_256", 256, 16, 768, 12, 12, 3072, false, 768, 12, 3072},
    {"ViT-B-16-SigLIP2-384", "vit_base_patch16_siglip_384", 384, 16, 768, 12, 12, 3072, false, 768, 12, 3072},
    {"ViT-B-16-SigLIP2-512", "vit_base_patch16_siglip_512", 512, 16, 768, 12, 12, 3072, false, 768, 12, 3072},
    {"ViT-B-32-SigLIP2-256", "vit_base_patch32_siglip_256", 256, 32, 768, 12, 12, 3072, true, 768, 12, 3072},
    {"ViT-L-16-SigLIP2-256", "vit_large_patch16_siglip_256", 256, 16, 1024, 24, 16, 4096, false, 1024, 24, 4096},
    {"ViT-L-16-SigLIP2-384", "vit_large_patch16_siglip_384", 384, 16, 1024, 24, 16, 4096, false, 1024, 24, 4096},
    {"ViT-L-16-SigLIP2-512", "vit_large_patch16_siglip_512", 512, 16, 1024, 24, 16, 4096, true, 1024, 24, 4096},
    {"ViT-SO400M-14-SigLIP2", "vit_so400m_patch14_siglip_224", 224, 14, 1152, 27, 16, 4304, false, 1152, 27, 4304},
    {"ViT-SO400M-14-SigLIP2-378", "vit_so400m_patch14_siglip_378", 378, 14, 1152, 27, 16, 4304, false, 1152, 27, 4304},
    {"ViT-SO400M-16-SigLIP2-256", "vit_so400m_patch16_siglip_256", 256, 16, 1152, 27, 16, 4304, true, 1152, 27, 4304},
    {"ViT-SO400M-16-SigLIP2-384", "vit_so400m_patch16_siglip_384", 384, 16, 1152, 27, 16, 4304, true, 1152, 27, 4304},
    {"ViT-SO400M-16-SigLIP2-512", "vit_so400m_patch16_siglip_512", 512, 16, 1152, 27, 16, 4304, true, 1152, 27, 4304},
    {"ViT-gopt-16-SigLIP2-256", "vit_giantopt_patch16_siglip_256", 256, 16, 1536, 40, 16, 6144, true, 1152, 27, 4304},
    {"ViT-gopt-16-SigLIP2-384", "vit_giantopt_patch16_siglip_384", 384, 16, 1536, 40, 16, 6144, true, 1152, 27, 4304},
};

TEST(Siglip2Config, EveryConfigIsTheTimm10Model) {
  for (const Want& w : kWant) {
    const ModelCfg c = load_model_config(w.name);
    const VisionCfg& v = c.vision;
    EXPECT_EQ(v.timm_model_name, w.timm) << w.name;
    EXPECT_EQ(v.image_size, w.image) << w.name;
    EXPECT_EQ(v.patch_size, w.patch) << w.name;
    EXPECT_EQ(v.width, w.width) << w.name;
    EXPECT_EQ(v.layers, w.layers) << w.name;
    EXPECT_EQ(v.heads(), w.heads) << w.name;
    EXPECT_EQ(v.mlp_width(), w.mlp) << w.name;
    EXPECT_EQ(find_timm_vit(w.timm)->gelu_tanh, w.vision_tanh) << w.name;
    EXPECT_EQ(c.embed_dim, w.width) << w.name << ": timm_proj none";
    EXPECT_EQ(c.text.width, w.text_width) << w.name;
    EXPECT_EQ(c.text.layers, w.text_layers) << w.name;
    EXPECT_EQ(c.text.mlp_width(), w.text_mlp) << w.name << ": text_cfg.mlp_ratio";
    EXPECT_EQ(c.text.vocab_size, 256000) << w.name;
    EXPECT_EQ(c.text.context_length, 64) << w.name;
    EXPECT_TRUE(c.text.gelu_tanh) << w.name << ": act_kwargs";
    EXPECT_EQ(c.text.ln_eps, 1e-6) << w.name;
    EXPECT_TRUE(c.custom_text && c.text.no_causal_mask && c.text.proj_bias) << w.name;
    EXPECT_EQ(c.text.pool, TextCfg::Pool::Last) << w.name;
    EXPECT_EQ(c.text.hf_tokenizer_name, std::string("timm/") + w.name) << w.name;
    // openclip models --check: the timm family, the Gemma tokenizer's name.
    const ConfigSummary s = check_model_config(c);
    EXPECT_EQ(s.family, "timm ViT") << w.name;
    EXPECT_EQ(s.tokenizer, c.text.hf_tokenizer_name) << w.name;
    EXPECT_EQ(s.image.find("GELU tanh") != std::string::npos, w.vision_tanh) << s.image;
    // The JSON written next to exported weights reads back as the same model.
    const ModelCfg back = parse_model_config(model_config_json(c), w.name);
    EXPECT_TRUE(back.text.gelu_tanh) << w.name;
    EXPECT_EQ(back.vision.timm_model_name, v.timm_model_name) << w.name;
    EXPECT_EQ(s.params, count_params(back)) << w.name;
  }
}

// OpenCLIP 2.24.0 (the SigLIP2 JSON registered, timm 1.0.22's towers as siglip_ref.py builds
// them): the state_dict's element and tensor counts at full size (the block counts measured at
// one block and multiplied out).
TEST(Siglip2Config, StateDictSizesMatchOpenClip) {
  struct Count {
    const char* name;
    int64_t elements;
    size_t tensors;
  };
  for (const Count& c :
       {Count{"ViT-B-16-SigLIP2", 375187970, 314}, Count{"ViT-B-32-SigLIP2-256", 376856066, 314},
        Count{"ViT-SO400M-16-SigLIP2-384", 1136039602, 674}, Count{"ViT-gopt-16-SigLIP2-384", 1871885426, 830},
        Count{"ViT-SO400M-14-SigLIP2-378", 1136008498, 674}}) {
    const ParamTable t = make_param_table(load_model_config(c.name));
    EXPECT_EQ(t.count(), c.elements) << c.name;
    EXPECT_EQ(t.params.size(), c.tensors) << c.name;
  }
  const ParamTable t = make_param_table(load_model_config("ViT-gopt-16-SigLIP2-256"));
  EXPECT_EQ(t.find("text.token_embedding.weight")->shape, (Shape{256000, 1152}));
  EXPECT_EQ(t.find("text.text_projection.weight")->shape, (Shape{1536, 1152})) << "text width 1152 to embed_dim 1536";
  EXPECT_EQ(t.find("visual.trunk.attn_pool.mlp.fc1.weight")->shape, (Shape{6144, 1536}));
}

TEST(Siglip2Config, ActKwargsOtherThanGeluApproximateAreRefused) {
  auto cfg = [](const std::string& text_extra, bool quick = false) {
    return std::string(R"({"embed_dim": 64, "quick_gelu": )") + (quick ? "true" : "false") +
           R"(, "vision_cfg": {"width": 64, "head_width": 32, "layers": 1},
              "text_cfg": {"width": 64, "heads": 2, "layers": 1)" +
           text_extra + "}}";
  };
  auto err = [](const std::string& json) { return error_of([&] { parse_model_config(json, "t"); }); };
  EXPECT_EQ(err(cfg(R"(, "act_kwargs": {"approximate": "tanh"})")), "");
  EXPECT_FALSE(parse_model_config(cfg(R"(, "act_kwargs": {"approximate": "none"})"), "t").text.gelu_tanh);
  EXPECT_FALSE(parse_model_config(cfg(R"(, "act_kwargs": null)"), "t").text.gelu_tanh);
  std::string e = err(cfg(R"(, "act_kwargs": {"approximate": "sigmoid"})"));
  EXPECT_NE(e.find("\"approximate\" must be \"tanh\" or \"none\""), std::string::npos) << e;
  EXPECT_NE(e.find("text_cfg"), std::string::npos) << e;
  e = err(cfg(R"(, "act_kwargs": {"inplace": true})"));
  EXPECT_NE(e.find("\"act_kwargs\": \"inplace\" is not implemented"), std::string::npos) << e;
  e = err(cfg(R"(, "act_kwargs": "tanh")"));
  EXPECT_NE(e.find("\"act_kwargs\" must be an object"), std::string::npos) << e;
  e = err(cfg(R"(, "act_kwargs": {"approximate": "tanh"})", true));
  EXPECT_NE(e.find("QuickGELU takes no arguments"), std::string::npos) << e;
  // The vision tower's act_kwargs stay refused (OpenCLIP's own ViT with them is not built).
  e = err(R"({"embed_dim": 64, "vision_cfg": {"width": 64, "head_width": 32, "layers": 1,
              "act_kwargs": {"approximate": "tanh"}}, "text_cfg": {"width": 64, "heads": 2, "layers": 1}})");
  EXPECT_NE(e.find("\"act_kwargs\""), std::string::npos) << e;
  EXPECT_NE(e.find("vision_cfg"), std::string::npos) << e;
}

// A SigLIP2 config's tokenizer from its hub repository (no local copy): tokenizer_config.json
// comes along, so its add_eos_token applies (the Gemma-layout test model: the file alone
// gives <bos> text, with the config <bos> text <eos>).
TEST(Siglip2Config, HubTokenizerBringsItsTokenizerConfig) {
  const std::string name = "timm/ViT-B-16-SigLIP2";
  for (const std::string& d : data_dirs())
    for (const char* f : {"tokenizer.json", "spiece.model"})
      if (fs::exists(fs::join(fs::join(d, name), f))) GTEST_SKIP() << "this machine has the tokenizer in " << d;
  test::FakeHub hub;
  const std::string src = OPENCLIP_TEST_DIR "/text/data/gemma_bpe/";
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
    hub.files[name + "/" + f] = fs::read_text(src + f).value();
  setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
  setenv("HF_HUB_CACHE", test::fresh_dir("siglip2_hub").c_str(), 1);
  std::shared_ptr<const TextTokenizer> tok;
  const std::string e = error_of([&] { tok = model_tokenizer(load_model_config("ViT-B-16-SigLIP2")); });
  unsetenv("HF_ENDPOINT");
  unsetenv("HF_HUB_CACHE");
  ASSERT_EQ(e, "");
  std::vector<int32_t> row(4);
  ASSERT_TRUE(tok->tokenize("", row).ok());
  EXPECT_EQ(row, (std::vector<int32_t>{2, 1, 0, 0}));
}

// max over rows of |a - b| / |b| (L2, rows of E).
double max_row_rel_l2(const std::vector<float>& a, const std::vector<float>& b, int64_t E) {
  double worst = 0;
  for (size_t r = 0; r * E < b.size(); ++r) {
    double d = 0, n = 0;
    for (int64_t i = 0; i < E; ++i) {
      const double x = a[r * E + i], y = b[r * E + i];
      d += (x - y) * (x - y), n += y * y;
    }
    worst = std::max(worst, std::sqrt(d / n));
  }
  return worst;
}

// One block per tower, real widths, against OpenCLIP 2.24 + timm (siglip_ref.py): the
// B/32 config has GELU tanh in both towers (its timm tower and its MAP head too).
TEST(Siglip2OpenClip, ForwardAtOneBlock) {
  OC_NEED_OPEN_CLIP();
  const std::string name = "ViT-B-32-SigLIP2-256", dir = test::fresh_dir("siglip2_forward");
  const int64_t B = 2;
  test::run_siglip_ref(name, 1, B, 0, dir);
  const ModelCfg cfg = test::siglip_at_depth(name, 1);
  const test::Embeddings e = test::encode_ref_batch(cfg, dir + "/w.pt", dir, B);
  const auto image = test::read_raw<float>(dir + "/image.f32"), text = test::read_raw<float>(dir + "/text.f32");
  EXPECT_GE(test::min_row_cosine(e.image, image, cfg.embed_dim), 0.99999);
  EXPECT_GE(test::min_row_cosine(e.text, text, cfg.embed_dim), 0.99999);
  // The cosine bound cannot tell the GELUs apart (1 - cos is quadratic in the difference: erf
  // GELU in the reference's towers moves 1 - cos by 6e-8 on the image, < 1e-7 on the text at
  // this init). The rows' relative L2 difference can: fp32 summation orders give ~1e-6, erf in
  // place of tanh 2.7e-4 (image) and 1.9e-4 (text) (measured with OpenCLIP); bound 2e-5.
  const double di = max_row_rel_l2(e.image, image, cfg.embed_dim), dt = max_row_rel_l2(e.text, text, cfg.embed_dim);
  EXPECT_LE(di, 2e-5);
  EXPECT_LE(dt, 2e-5);
  std::printf("[ %s ] relative L2 difference: image %.2g, text %.2g\n", name.c_str(), di, dt);
}

}  // namespace
}  // namespace oc
