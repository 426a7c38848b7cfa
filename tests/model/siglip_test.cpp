// The SigLIP model family (issue 27): OpenCLIP 2.24's SigLIP configs (a timm ViT image tower
// with MAP pooling, CustomTextCLIP's text tower) parse into the architecture timm builds,
// with OpenCLIP's state_dict names; other timm towers stay refused; the timm tower in
// amp_bf16 and with --grad-checkpointing agrees with its fp32 path; and one forward against
// OpenCLIP + timm (1 block per tower, real widths; the training checks are
// siglip_long_test.cpp).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/check.h"
#include "core/fs.h"
#include "core/machine.h"
#include "error_of.h"
#include "model/model_tokenizer.h"
#include "model/params.h"
#include "model/precision.h"
#include "siglip_ref.h"

namespace oc {
namespace {

using test::error_of;

TEST(SiglipConfig, EverySiglipConfigIsTheTimmModel) {
  struct Want {
    const char* name;
    int image, patch, width, layers, heads, mlp, context, vocab;
  };
  for (const Want& w : {Want{"ViT-B-16-SigLIP", 224, 16, 768, 12, 12, 3072, 64, 32000},
                        Want{"ViT-B-16-SigLIP-256", 256, 16, 768, 12, 12, 3072, 64, 32000},
                        Want{"ViT-B-16-SigLIP-384", 384, 16, 768, 12, 12, 3072, 64, 32000},
                        Want{"ViT-B-16-SigLIP-512", 512, 16, 768, 12, 12, 3072, 64, 32000},
                        Want{"ViT-B-16-SigLIP-i18n-256", 256, 16, 768, 12, 12, 3072, 64, 250000},
                        Want{"ViT-L-16-SigLIP-256", 256, 16, 1024, 24, 16, 4096, 64, 32000},
                        Want{"ViT-L-16-SigLIP-384", 384, 16, 1024, 24, 16, 4096, 64, 32000},
                        Want{"ViT-SO400M-14-SigLIP", 224, 14, 1152, 27, 16, 4304, 16, 32000},
                        Want{"ViT-SO400M-14-SigLIP-384", 384, 14, 1152, 27, 16, 4304, 64, 32000},
                        // OpenCLIP 3.3's, on timm 1.0's vit_so400m_patch14_siglip_378
                        Want{"ViT-SO400M-14-SigLIP-378", 378, 14, 1152, 27, 16, 4304, 64, 32000}}) {
    const ModelCfg c = load_model_config(w.name);
    const VisionCfg& v = c.vision;
    EXPECT_TRUE(v.timm()) << w.name;
    EXPECT_EQ(v.image_size, w.image) << w.name;
    EXPECT_EQ(v.patch_size, w.patch) << w.name;
    EXPECT_EQ(v.width, w.width) << w.name;
    EXPECT_EQ(v.layers, w.layers) << w.name;
    EXPECT_EQ(v.heads(), w.heads) << w.name;
    EXPECT_EQ(v.mlp_width(), w.mlp) << w.name;  // int(1152 * 3.7362) = 4304
    EXPECT_EQ(v.tokens(), v.grid() * v.grid()) << w.name << ": no class token";
    EXPECT_EQ(v.ln_eps, 1e-6) << w.name;
    EXPECT_EQ(c.text.ln_eps, 1e-6) << w.name << ": text_cfg.norm_kwargs";
    EXPECT_EQ(c.text.context_length, w.context) << w.name;
    EXPECT_EQ(c.text.vocab_size, w.vocab) << w.name;
    EXPECT_TRUE(c.custom_text && c.text.no_causal_mask && c.text.proj_bias) << w.name;
    EXPECT_EQ(c.text.pool, TextCfg::Pool::Last) << w.name;
    ASSERT_TRUE(c.init_logit_bias) << w.name;
    EXPECT_EQ(*c.init_logit_bias, -10.0) << w.name;
    EXPECT_EQ(c.embed_dim, v.width) << w.name;
    // The JSON written next to exported weights reads back as the same model.
    const ModelCfg back = parse_model_config(model_config_json(c), w.name);
    EXPECT_EQ(back.vision.timm_model_name, v.timm_model_name);
    EXPECT_EQ(count_params(back), count_params(c)) << w.name;
    EXPECT_EQ(back.text.ln_eps, 1e-6);
    EXPECT_TRUE(back.custom_text);
  }
}

// OpenCLIP 2.24.0's state_dicts (create_model(name).state_dict() at random init).
TEST(SiglipConfig, StateDictMatchesOpenClip) {
  const std::pair<const char*, int64_t> counts[] = {{"ViT-B-16-SigLIP", 203155970},
                                                    {"ViT-B-16-SigLIP-i18n-256", 370626050}};
  for (const auto& [name, n] : counts) {
    const ParamTable t = make_param_table(load_model_config(name));
    EXPECT_EQ(t.count(), n) << name;
    EXPECT_EQ(t.params.size(), 314u) << name;
  }
  const ParamTable t = make_param_table(load_model_config("ViT-B-16-SigLIP"));
  const char* first[] = {"logit_scale", "logit_bias", "visual.trunk.pos_embed", "visual.trunk.patch_embed.proj.weight",
                         "visual.trunk.patch_embed.proj.bias", "visual.trunk.blocks.0.norm1.weight"};
  for (size_t i = 0; i < std::size(first); ++i) EXPECT_EQ(t.params[i].name, first[i]);
  EXPECT_EQ(t.params.back().name, "text.text_projection.bias");
  EXPECT_EQ(t.find("visual.trunk.pos_embed")->shape, (Shape{1, 196, 768}));
  EXPECT_EQ(t.find("visual.trunk.attn_pool.latent")->shape, (Shape{1, 1, 768}));
  EXPECT_EQ(t.find("visual.trunk.attn_pool.kv.weight")->shape, (Shape{1536, 768}));
  EXPECT_EQ(t.find("visual.trunk.blocks.11.attn.qkv.weight")->shape, (Shape{2304, 768}));
  EXPECT_EQ(t.find("text.token_embedding.weight")->shape, (Shape{32000, 768}));
  EXPECT_EQ(t.find("text.transformer.resblocks.11.mlp.c_fc.weight")->shape, (Shape{3072, 768}));
  EXPECT_FALSE(t.find("visual.proj") || t.find("visual.trunk.cls_token") || t.find("visual.trunk.head.weight"));
  // OpenCLIP's weight-decay rule on these names.
  EXPECT_TRUE(t.find("visual.trunk.pos_embed")->decay);
  EXPECT_TRUE(t.find("visual.trunk.attn_pool.latent")->decay);
  EXPECT_FALSE(t.find("visual.trunk.norm.weight")->decay);
  EXPECT_FALSE(t.find("visual.trunk.attn_pool.q.bias")->decay);
  EXPECT_FALSE(t.find("text.ln_final.weight")->decay);
  EXPECT_EQ(vision_block_prefix(load_model_config("ViT-B-16-SigLIP"), 3), "visual.trunk.blocks.3.");
  EXPECT_EQ(text_block_prefix(load_model_config("ViT-B-16-SigLIP"), 3), "text.transformer.resblocks.3.");
}

TEST(SiglipConfig, OtherTimmTowersAndHeadsAreRefused) {
  auto cfg = [](const std::string& vision, int embed = 768) {
    return R"({"embed_dim": )" + std::to_string(embed) + R"(, "vision_cfg": {)" + vision +
           R"(}, "text_cfg": {"width": 64, "heads": 2, "layers": 1}})";
  };
  auto err = [](const std::string& json) { return error_of([&] { parse_model_config(json, "t"); }); };
  const std::string siglip = R"("timm_model_name": "vit_base_patch16_siglip_224", "timm_pool": "map", "timm_proj": "none")";
  EXPECT_EQ(err(cfg(siglip)), "");
  std::string e = err(cfg(R"("timm_model_name": "vit_medium_patch16_gap_256", "timm_pool": "", "timm_proj": "linear")"));
  EXPECT_NE(e.find("\"timm_model_name\" \"vit_medium_patch16_gap_256\" is not supported: timm image towers are not built"),
            std::string::npos)
      << e;
  e = err(cfg(R"("timm_model_name": "vit_base_patch16_siglip_224", "timm_pool": "avg", "timm_proj": "none")"));
  EXPECT_NE(e.find("\"timm_pool\" \"avg\" is not supported"), std::string::npos) << e;
  e = err(cfg(R"("timm_model_name": "vit_base_patch16_siglip_224", "timm_pool": "map")"));
  EXPECT_NE(e.find("\"timm_proj\" \"linear\" is not supported"), std::string::npos) << e;
  e = err(cfg(siglip + R"(, "image_size": 256)"));
  EXPECT_NE(e.find("\"image_size\" is 256, but the timm model vit_base_patch16_siglip_224 has 224"), std::string::npos)
      << e;
  e = err(cfg(siglip + R"(, "patch_dropout": 0.5)"));
  EXPECT_NE(e.find("\"patch_dropout\" is an option of OpenCLIP's own ViT"), std::string::npos) << e;
  e = err(cfg(siglip, 512));
  EXPECT_NE(e.find("embed_dim is 512"), std::string::npos) << e;
  e = err(cfg(R"("timm_pool": "map")"));
  EXPECT_NE(e.find("without \"timm_model_name\""), std::string::npos) << e;
  e = err(R"({"embed_dim": 8, "vision_cfg": {}, "text_cfg": {"norm_kwargs": {"elementwise_affine": false}}})");
  EXPECT_NE(e.find("\"norm_kwargs\": \"elementwise_affine\" is not implemented"), std::string::npos) << e;
}

// --precision bf16 on a timm model: OpenCLIP's create_model casts the whole model to bf16,
// then only the text tower's LayerNormFp32 modules back.
TEST(SiglipConfig, Bf16PrecisionCastsAllButTheTextLayerNorms) {
  for (const char* n : {"visual.trunk.norm.weight", "visual.trunk.pos_embed", "visual.trunk.attn_pool.latent",
                        "logit_scale", "logit_bias", "text.token_embedding.weight", "text.positional_embedding",
                        "text.transformer.resblocks.0.attn.in_proj_weight", "text.text_projection.bias"})
    EXPECT_TRUE(is_lp_param_timm(n)) << n;
  for (const char* n : {"text.transformer.resblocks.0.ln_1.weight", "text.transformer.resblocks.3.ln_2.bias",
                        "text.ln_final.weight"})
    EXPECT_FALSE(is_lp_param_timm(n)) << n;
}

// A SigLIP config without its SentencePiece model (and no hub to download it from): the
// tokenizer (made before a run starts) names the file and the Hugging Face repository OpenCLIP
// would take it from.
TEST(SiglipConfig, MissingTokenizerFileIsNamed) {
  for (const std::string& d : data_dirs())
    for (const char* f : {"tokenizer.json", "spiece.model"})
      if (fs::exists(fs::join(fs::join(d, "timm/ViT-B-16-SigLIP"), f)))
        GTEST_SKIP() << "this machine has the tokenizer in " << d;
  const std::string e = error_of([] { model_tokenizer(load_model_config("ViT-B-16-SigLIP")); });
  EXPECT_NE(e.find("timm/ViT-B-16-SigLIP"), std::string::npos) << e;
  EXPECT_NE(e.find("spiece.model"), std::string::npos) << e;
  // model_tokenizer serves commands without a vocabulary flag (embed, eval, train, ...): the
  // advice names where the file is read instead of a flag they do not take.
  EXPECT_EQ(e.find("--hf-tokenizer-vocab"), std::string::npos) << e;
  EXPECT_NE(e.find("hf-hub:ORG/NAME"), std::string::npos) << e;
}

// A small timm-shaped model (the real widths are in the reference tests): its amp_bf16
// forward and backward follow fp32, and --grad-checkpointing changes nothing.
ModelCfg tiny_timm(const std::string& name) {
  ModelCfg c = load_model_config(name);
  c.vision.image_size = 3 * c.vision.patch_size, c.vision.width = 64, c.vision.head_width = 16, c.vision.layers = 2;
  c.embed_dim = 64;
  c.text.width = 64, c.text.heads = 4, c.text.layers = 1, c.text.vocab_size = 100;
  return c;
}

struct TinyRun {
  std::vector<float> image, grads;
};
TinyRun tiny_step(Precision prec, bool checkpoint, const std::string& name = "ViT-B-16-SigLIP") {
  const ModelCfg c = tiny_timm(name);
  const int64_t B = 3, S = c.vision.image_size, L = c.text.context_length;
  Clip m(c);
  m.init(7);
  m.set_precision(prec);
  m.plan_training(B, checkpoint);
  Rng rng(3);
  std::vector<float> images(size_t(B * 3 * S * S));
  for (float& x : images) x = float(rng.normal());
  std::vector<int32_t> tokens(size_t(B * L));
  for (int32_t& t : tokens) t = int32_t(rng.below(100));
  const Clip::Features f = m.forward(images.data(), tokens.data(), B);
  TinyRun r{std::vector<float>(f.image, f.image + B * c.embed_dim), {}};
  std::vector<float> d_img(r.image.size()), d_txt(r.image.size());
  for (size_t i = 0; i < d_img.size(); ++i) d_img[i] = float(rng.normal()), d_txt[i] = float(rng.normal());
  m.zero_grads();
  m.backward(d_img.data(), d_txt.data());
  r.grads.assign(m.grads(), m.grads() + m.table().total);
  return r;
}

double rel(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * double(a[i] - b[i]), n += double(b[i]) * b[i];
  return std::sqrt(d / n);
}

TEST(SiglipTimmTower, AmpBf16FollowsFp32AndCheckpointingIsExact) {
  const TinyRun f32 = tiny_step(Precision::Fp32, false), ck = tiny_step(Precision::Fp32, true);
  EXPECT_EQ(f32.image, ck.image);
  EXPECT_EQ(f32.grads, ck.grads) << "recomputed blocks give the same gradients";
  const TinyRun b16 = tiny_step(Precision::AmpBf16, false);
  // bf16 GEMM operands (8 bits of mantissa) through 2 blocks and the MAP head: ~1e-2 relative
  // (L2 over all entries); a wrong bf16 path (an operand never converted, a missing bias) is O(1).
  EXPECT_LT(rel(b16.image, f32.image), 3e-2);
  EXPECT_LT(rel(b16.grads, f32.grads), 5e-2);
  EXPECT_GT(rel(f32.grads, std::vector<float>(f32.grads.size(), 0.0f)), 0.5) << "gradients are not all zero";
}

// The same with a SigLIP2 config whose towers both run GELU tanh (its bf16 GEMM epilogue and
// fused activation backward).
TEST(SiglipTimmTower, Siglip2AmpBf16FollowsFp32AndCheckpointingIsExact) {
  const char* name = "ViT-B-32-SigLIP2-256";
  const TinyRun f32 = tiny_step(Precision::Fp32, false, name), ck = tiny_step(Precision::Fp32, true, name);
  EXPECT_EQ(f32.image, ck.image);
  EXPECT_EQ(f32.grads, ck.grads);
  const TinyRun b16 = tiny_step(Precision::AmpBf16, false, name);
  EXPECT_LT(rel(b16.image, f32.image), 3e-2);  // the bounds above
  EXPECT_LT(rel(b16.grads, f32.grads), 5e-2);
  EXPECT_GT(rel(f32.grads, std::vector<float>(f32.grads.size(), 0.0f)), 0.5);
}

TEST(SiglipOpenClip, ForwardAtOneBlock) {
  OC_NEED_OPEN_CLIP();
  const std::string name = "ViT-B-16-SigLIP", dir = test::fresh_dir("siglip_forward");
  const int64_t B = 2;
  test::run_siglip_ref(name, 1, B, 0, dir);
  const ModelCfg cfg = test::siglip_at_depth(name, 1);
  const test::Embeddings e = test::encode_ref_batch(cfg, dir + "/w.pt", dir, B);
  // fp32 against PyTorch: cosine 1 - ~1e-12; a wrong eps, GELU or pooling is 1e-3 off or more.
  EXPECT_GE(test::min_row_cosine(e.image, test::read_raw<float>(dir + "/image.f32"), cfg.embed_dim), 0.99999);
  EXPECT_GE(test::min_row_cosine(e.text, test::read_raw<float>(dir + "/text.f32"), cfg.embed_dim), 0.99999);
}

}  // namespace
}  // namespace oc
