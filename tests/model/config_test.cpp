#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>

#include "core/check.h"
#include "model/config.h"
#include "model/params.h"

namespace oc {
namespace {

TEST(ModelConfig, EveryBuiltinParses) {
  auto names = builtin_model_names();
  for (const char* n : {"ViT-B-32", "ViT-B-32-quickgelu", "ViT-B-32-256", "ViT-B-16", "ViT-L-14", "ViT-H-14",
                        "ViT-g-14", "ViT-bigG-14", "ViT-S-32", "ViT-S-16", "ViT-M-32", "ViT-M-16"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (auto& n : names) EXPECT_NO_THROW(load_model_config(n)) << n;
  EXPECT_TRUE(load_model_config("ViT-B-32-quickgelu").quick_gelu);
  EXPECT_FALSE(load_model_config("ViT-B-32").quick_gelu);
  EXPECT_EQ(load_model_config("ViT-B/32").name, "ViT-B-32");  // '/' as OpenCLIP accepts
}

TEST(ModelConfig, ViTB32MatchesOpenClipStateDict) {
  ModelCfg c = load_model_config("ViT-B-32");
  ParamTable t = make_param_table(c);
  EXPECT_EQ(t.params.size(), 302u);
  EXPECT_EQ(t.count(), 151277313);
  EXPECT_EQ(count_params(c), 151277313);
  EXPECT_EQ(t.params[0].name, "positional_embedding");
  EXPECT_EQ(t.params[2].name, "logit_scale");
  EXPECT_TRUE(t.params[2].shape.empty());
  EXPECT_EQ(t.params.back().name, "ln_final.bias");
  const ParamInfo* in = t.find("visual.transformer.resblocks.11.attn.in_proj_weight");
  ASSERT_TRUE(in);
  EXPECT_EQ(in->shape, (Shape{2304, 768}));
  EXPECT_EQ(t.find("transformer.resblocks.0.mlp.c_fc.weight")->shape, (Shape{2048, 512}));
  EXPECT_EQ(t.find("visual.conv1.weight")->shape, (Shape{768, 3, 32, 32}));
  // OpenCLIP's weight-decay split (section 8 of the reference).
  EXPECT_TRUE(t.find("visual.conv1.weight")->decay);
  EXPECT_TRUE(t.find("visual.positional_embedding")->decay);
  EXPECT_TRUE(t.find("positional_embedding")->decay);
  EXPECT_TRUE(t.find("token_embedding.weight")->decay);
  EXPECT_FALSE(t.find("visual.class_embedding")->decay);
  EXPECT_FALSE(t.find("logit_scale")->decay);
  EXPECT_FALSE(t.find("ln_final.weight")->decay);
  EXPECT_FALSE(t.find("transformer.resblocks.3.attn.in_proj_bias")->decay);
  for (auto& p : t.params) EXPECT_EQ(p.offset % 16, 0u) << p.name;
}

TEST(ModelConfig, ParamCountsMatchOpenClipProfile) {
  // docs/model_profile.csv of OpenCLIP, in millions (2 decimals).
  // Every plain-ViT config of OpenCLIP 2.24.0: the -quickgelu, -plus, -alt (ViT-M-16-alt:
  // LayerScale) and -CLIPA variants (no ln_pre, average pooling, text pool "last") and the
  // other sizes.
  const std::pair<const char*, double> expect[] = {
      {"ViT-S-32", 63.09},         {"ViT-M-32", 103.12},          {"ViT-B-16", 149.62},
      {"ViT-L-14", 427.62},        {"ViT-H-14", 986.11},          {"ViT-g-14", 1366.68},
      {"ViT-bigG-14", 2539.57},    {"ViT-B-32-256", 151.29},      {"ViT-B-32", 151.28},
      {"ViT-B-32-quickgelu", 151.28}, {"ViT-S-32-alt", 43.22},    {"ViT-M-32-alt", 80.07},
      {"ViT-S-16-alt", 42.4},      {"ViT-S-16", 62.26},           {"ViT-M-16", 102.02},
      {"ViT-B-32-plus-256", 210.3}, {"ViT-B-16-quickgelu", 149.62}, {"ViT-B-16-plus", 208.35},
      {"ViT-B-16-plus-240", 208.38}, {"ViT-L-16", 427.74},        {"ViT-L-14-quickgelu", 427.62},
      {"ViT-L-14-280", 427.76},    {"ViT-L-16-320", 427.95},      {"ViT-H-16", 986.26},
      {"ViT-H-14-quickgelu", 986.11}, {"ViT-L-14-336", 427.94},   {"ViT-H-14-378-quickgelu", 986.71},
      {"ViT-e-14", 4581.09},       {"ViT-M-16-alt", 78.98},       {"ViT-L-14-CLIPA", 414.21},
      {"ViT-H-14-CLIPA", 968.24},  {"ViT-L-14-CLIPA-336", 414.54}, {"ViT-H-14-CLIPA-336", 968.64},
      {"ViT-bigG-14-CLIPA", 2517.22}, {"ViT-bigG-14-CLIPA-336", 2517.76}};
  for (auto& [n, m] : expect) {
    const ModelCfg c = load_model_config(n);
    EXPECT_NEAR(double(count_params(c)) / 1e6, m, 0.006) << n;
    EXPECT_EQ(make_param_table(c).count(), count_params(c)) << n << ": the built model has the counted parameters";
  }
}

TEST(ModelConfig, OptionsGiveOpenClipStateDict) {
  // ViT-M-16-alt: LayerScale in every block, in ResidualAttentionBlock's registration order.
  ParamTable t = make_param_table(load_model_config("ViT-M-16-alt"));
  auto index = [&](const std::string& n) {
    for (size_t i = 0; i < t.params.size(); ++i)
      if (t.params[i].name == n) return int(i);
    return -1;
  };
  const std::string b0 = "visual.transformer.resblocks.0.";
  EXPECT_EQ(index(b0 + "ls_1.gamma"), index(b0 + "attn.out_proj.bias") + 1);
  EXPECT_EQ(index(b0 + "ln_2.weight"), index(b0 + "ls_1.gamma") + 1);
  EXPECT_EQ(index(b0 + "ls_2.gamma"), index(b0 + "mlp.c_proj.bias") + 1);
  EXPECT_EQ(t.find(b0 + "ls_2.gamma")->shape, (Shape{512}));
  EXPECT_FALSE(t.find(b0 + "ls_1.gamma")->decay);  // ndim < 2
  EXPECT_EQ(t.find("transformer.resblocks.0.ls_1.gamma"), nullptr) << "text_cfg has no ls_init_value";
  // -CLIPA: no visual.ln_pre; the text projection is still a parameter.
  ParamTable c = make_param_table(load_model_config("ViT-L-14-CLIPA"));
  EXPECT_EQ(c.find("visual.ln_pre.weight"), nullptr);
  EXPECT_EQ(c.find("text_projection")->shape, (Shape{768, 768}));
  // proj_bias: text_projection is an nn.Linear, a submodule registered after ln_final.
  ModelCfg pb = load_model_config("test-tiny");
  pb.text.proj_bias = true;
  ParamTable tp = make_param_table(pb);
  EXPECT_EQ(tp.find("text_projection"), nullptr);
  EXPECT_EQ(tp.params[tp.params.size() - 2].name, "text_projection.weight");
  EXPECT_EQ(tp.params.back().name, "text_projection.bias");
  EXPECT_EQ(tp.find("text_projection.weight")->shape, (Shape{32, 48}));
  EXPECT_EQ(tp.params[1].name, "logit_scale");
  // The options survive the config's JSON (stored next to exported weights).
  ModelCfg a = load_model_config("ViT-bigG-14-CLIPA-336");
  ModelCfg back = parse_model_config(model_config_json(a), "x");
  EXPECT_EQ(count_params(back), count_params(a));
  EXPECT_TRUE(back.vision.no_ln_pre && back.vision.avg_pool && back.vision.final_ln_after_pool);
  EXPECT_TRUE(back.text.no_causal_mask);
  EXPECT_EQ(back.text.pool, TextCfg::Pool::Last);
  EXPECT_EQ(back.text.hf_tokenizer_name, "bert-base-uncased");
  EXPECT_NE(back.text.tokenizer_kwargs_json.find("strip_sep_token"), std::string::npos);
}

TEST(ModelConfig, FlopsMatchOpenClipProfile) {
  ModelCfg c = load_model_config("ViT-B-32");
  // Profile: image 8.82, text 5.96 GFLOPs (torch FlopCounter; our count includes attention
  // score/value products, as FlopCounter does).
  EXPECT_NEAR(forward_gflops_image(c), 8.82, 0.05);
  EXPECT_NEAR(forward_gflops_text(c, 77), 5.96, 0.05);
}

TEST(ModelConfig, BadConfigsGiveClearErrors) {
  auto msg = [](const std::string& json) {
    try {
      parse_model_config(json, "bad");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(msg("{not json").find("model config bad: not valid JSON: at byte offset "), std::string::npos);
  // Found by fuzz_model_config: a number that overflows a double is the JSON library's
  // out_of_range, not a parse_error, and escaped as an abort.
  EXPECT_NE(msg(R"({"embed_dim": 512444444e888878888})").find("not valid JSON: at byte offset 14: number overflow"),
            std::string::npos);
  EXPECT_NE(msg(R"({"embed_dim": 99999999999, "vision_cfg": {}, "text_cfg": {}})").find("out of range"), std::string::npos);
  EXPECT_NE(msg(R"({"embed_dim": 512, "text_cfg": {}})").find("vision_cfg"), std::string::npos);
  // A ResNet tower ("layers" as a list) has 4 stages and no patch size.
  EXPECT_NE(msg(R"({"embed_dim": 512, "vision_cfg": {"layers": [3,4,6]}, "text_cfg": {}})").find("ResNet"),
            std::string::npos);
  EXPECT_NE(msg(R"({"embed_dim": 512, "vision_cfg": {"layers": [3,4,6,3], "patch_size": 16}, "text_cfg": {}})")
                .find("no \"patch_size\""),
            std::string::npos);
  EXPECT_NE(msg(R"({"embed_dim": "x", "vision_cfg": {}, "text_cfg": {}})").find("embed_dim"), std::string::npos);
  EXPECT_NE(msg(R"({"embed_dim": 8, "vision_cfg": {"image_size": 30, "patch_size": 8}, "text_cfg": {}})")
                .find("multiple of patch_size"),
            std::string::npos);
  // Every key is looked up (OpenCLIP 2.24.0's CLIPVisionCfg / CLIPTextCfg / CLIP kwargs):
  const std::string base = R"("embed_dim": 8, "vision_cfg": {"image_size": 32, "patch_size": 8, "width": 64, "layers": 1)";
  auto cfg = [&](const std::string& vision_extra, const std::string& text_extra, const std::string& top_extra = "") {
    return "{" + base + vision_extra + R"(}, "text_cfg": {"width": 64, "heads": 2, "layers": 1)" + text_extra + "}" +
           top_extra + "}";
  };
  EXPECT_EQ(msg(cfg("", "")), "");
  // OpenCLIP options at their defaults build the same model: accepted.
  EXPECT_EQ(msg(cfg(R"(, "no_ln_pre": false, "pool_type": "tok", "ls_init_value": null, "patch_dropout": 0)",
                    R"(, "pool_type": "argmax", "proj_bias": false, "pad_id": 0)")),
            "");
  // The options the -CLIPA and -alt configs use are built.
  EXPECT_EQ(msg(cfg(R"(, "no_ln_pre": true, "pool_type": "avg", "final_ln_after_pool": true, "ls_init_value": 1e-4, "patch_dropout": 0.5)",
                    R"(, "pool_type": "last", "no_causal_mask": true, "proj_bias": true, "pad_id": 1, "ls_init_value": 0.1, "hf_tokenizer_name": "bert-base-uncased", "tokenizer_kwargs": {"strip_sep_token": true})")),
            "");
  // Anything else names the key, the section and what to do; never trained as another model.
  std::string e = msg(cfg(R"(, "attentional_pool": true)", ""));
  EXPECT_NE(e.find("vision_cfg: \"attentional_pool\": true"), std::string::npos) << e;
  EXPECT_NE(e.find("CoCa"), std::string::npos) << e;
  EXPECT_NE(e.find("Remove the key"), std::string::npos) << e;
  e = msg(cfg("", R"(, "embed_cls": true)"));
  EXPECT_NE(e.find("text_cfg: \"embed_cls\""), std::string::npos) << e;
  e = msg(cfg(R"(, "pool_type": "none")", ""));
  EXPECT_NE(e.find("vision_cfg: \"pool_type\" is \"none\""), std::string::npos) << e;
  e = msg(cfg("", R"(, "pool_type": "mean")"));
  EXPECT_NE(e.find("text_cfg: \"pool_type\" is \"mean\""), std::string::npos) << e;
  e = msg(cfg(R"(, "patch_dropout": 1.0)", ""));
  EXPECT_NE(e.find("patch_dropout"), std::string::npos) << e;
  e = msg(cfg("", R"(, "hf_tokenizer_name": "roberta-base")"));
  EXPECT_NE(e.find("\"hf_tokenizer_name\" \"roberta-base\" is not supported"), std::string::npos) << e;
  e = msg(cfg(R"(, "pos_embed_type": "sin_cos_2d")", ""));
  EXPECT_NE(e.find("pos_embed_type"), std::string::npos) << e;
  // CustomTextCLIP: the same text tower, its parameters under text.* (the SigLIP configs).
  EXPECT_EQ(msg(cfg("", "", R"(, "custom_text": true)")), "");
  EXPECT_TRUE(parse_model_config(cfg("", "", R"(, "custom_text": true)"), "ct").custom_text);
  EXPECT_TRUE(make_param_table(parse_model_config(cfg("", "", R"(, "custom_text": true)"), "ct"))
                  .find("text.transformer.resblocks.0.attn.in_proj_weight"));
  e = msg(cfg("", "", R"(, "multimodal_cfg": {"width": 512})"));
  EXPECT_NE(e.find("CoCa"), std::string::npos) << e;
  e = msg(cfg(R"(, "patch_sise": 8)", ""));
  EXPECT_NE(e.find("\"patch_sise\" is not a key"), std::string::npos) << e;
  e = msg(cfg("", R"(, "hf_model_name": "bert-base-uncased")"));
  EXPECT_NE(e.find("Hugging Face"), std::string::npos) << e;
  // A config file is named by its path.
  const std::string path = ::testing::TempDir() + "/odd-config.json";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(cfg("", R"(, "output_tokens": true)").c_str(), f);
    std::fclose(f);
  }
  try {
    load_model_config(path);
    ADD_FAILURE() << "output_tokens: true was accepted";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find(path + " text_cfg: \"output_tokens\""), std::string::npos) << err.what();
  }
  try {
    load_model_config("ViT-Q-99");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ViT-B-32"), std::string::npos) << "lists the built-in names";
  }
}

TEST(ModelParams, InitFollowsOpenClipDistributions) {
  ModelCfg c = load_model_config("ViT-B-32");
  ParamTable t = make_param_table(c);
  std::vector<float> w(t.total);
  init_params_each(c, t, 0, [&](const ParamInfo& p, std::span<const float> v) {
    std::copy(v.begin(), v.end(), w.begin() + ptrdiff_t(p.offset));
  });
  auto stats = [&](const char* name) {
    const ParamInfo* p = t.find(name);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < p->numel; ++i) s += w[p->offset + i], s2 += double(w[p->offset + i]) * w[p->offset + i];
    double mean = s / p->numel;
    return std::pair{mean, std::sqrt(s2 / p->numel - mean * mean)};
  };
  EXPECT_NEAR(stats("token_embedding.weight").second, 0.02, 0.0005);
  EXPECT_NEAR(stats("positional_embedding").second, 0.01, 0.0005);
  EXPECT_NEAR(stats("transformer.resblocks.0.attn.in_proj_weight").second, std::pow(512, -0.5), 0.001);
  EXPECT_NEAR(stats("transformer.resblocks.0.mlp.c_fc.weight").second, std::pow(1024, -0.5), 0.001);
  EXPECT_NEAR(stats("transformer.resblocks.0.attn.out_proj.weight").second, std::pow(512, -0.5) / std::sqrt(24.0), 0.001);
  EXPECT_NEAR(stats("visual.positional_embedding").second, std::pow(768, -0.5), 0.002);
  // Uniform(+-1/sqrt(3072)): std = bound / sqrt(3).
  EXPECT_NEAR(stats("visual.conv1.weight").second, 1 / std::sqrt(3072.0) / std::sqrt(3.0), 0.0005);
  EXPECT_EQ(stats("visual.ln_pre.weight").first, 1.0);
  EXPECT_EQ(stats("transformer.resblocks.0.attn.in_proj_bias").first, 0.0);
  EXPECT_NEAR(w[t.find("logit_scale")->offset], std::log(1 / 0.07), 1e-6);
}

}  // namespace
}  // namespace oc
