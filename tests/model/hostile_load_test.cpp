// Issue 42's loader findings in the model layer, each from its repro: deep JSON in a model
// config and a hub open_clip_config.json (#3), preprocess_cfg values and BatchNorm statistics
// that made every embedding NaN (#8), and a tokenizer whose ids pass the model's vocab_size (#9).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/fs.h"
#include "model/clip.h"
#include "model/model_source.h"
#include "model/model_tokenizer.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc {
namespace {

const char* kTinyCfg = R"({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 2, "width": 64,
  "head_width": 32, "patch_size": 8}, "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 48,
  "heads": 2, "layers": 2}})";

#define EXPECT_HAS(s, part) EXPECT_NE((s).find(part), std::string::npos) << (s)

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(HostileLoad, DeepJsonInModelConfigsIsAnError) {
  // 300,000 levels overflowed the stack (SIGSEGV) in every reader below.
  const std::string deep = R"({"embed_dim": 32, "x": )" + nested(300000) + "}";
  std::string e = error_of([&] { parse_model_config(deep, "deep", "deep.json"); });
  EXPECT_HAS(e, "model config deep.json: not valid JSON here: at byte offset");
  EXPECT_HAS(e, "nested more than 128 deep");
  e = error_of([&] { text_tokenizer_spec_from_config(deep, "deep.json"); });
  EXPECT_HAS(e, "model config deep.json: not valid JSON here");
  const std::string dir = test::fresh_dir("hostile_hub") + "/deep";
  fs::make_dirs(dir);
  fs::write_atomic(dir + "/open_clip_config.json",
                   R"({"model_cfg": )" + std::string(kTinyCfg) + R"(, "preprocess_cfg": )" + nested(300000) + "}");
  e = error_of([&] { resolve_model_source(dir, ""); });
  EXPECT_HAS(e, dir + "/open_clip_config.json: not valid JSON here: at byte offset");
}

void write_hub(const std::string& dir, const std::string& preprocess) {
  fs::make_dirs(dir);
  fs::write_atomic(dir + "/open_clip_config.json",
                   R"({"model_cfg": )" + std::string(kTinyCfg) + R"(, "preprocess_cfg": )" + preprocess + "}");
  if (!fs::exists(dir + "/open_clip_model.safetensors")) {
    Clip m(parse_model_config(kTinyCfg, "tiny"));
    m.init(7);
    save_weights(m, dir + "/open_clip_model.safetensors");
  }
}

TEST(HostileLoad, PreprocessMeanAndStdAreValidated) {
  // std 0, 1e-45, negative, or mean 3e38 gave NaN embeddings (and wrote them into an index).
  const std::string dir = test::fresh_dir("hostile_pre") + "/hub";
  const std::string file = dir + "/open_clip_config.json";
  for (auto [pre, want] : std::vector<std::pair<std::string, std::string>>{
           {R"({"std": 0})", "preprocess_cfg.std[0] is 0; it must be from 0.001 to 1000"},
           {R"({"std": [0.5, 1e-45, 0.5]})", "preprocess_cfg.std[1] is 1e-45; it must be from 0.001 to 1000"},
           {R"({"std": [0.5, 0.5, -0.5]})", "preprocess_cfg.std[2] is -0.5"},
           {R"({"mean": [3e38, 0.5, 0.5]})", "preprocess_cfg.mean[0] is 3e+38; it must be within +-1000"}}) {
    write_hub(dir, pre);
    std::string e = error_of([&] { resolve_model_source(dir, ""); });
    EXPECT_HAS(e, file + ": " + want);
  }
  write_hub(dir, R"({"mean": [0.48, 0.46, 0.41], "std": 0.27})");  // published values load
  EXPECT_EQ(resolve_model_source(dir, "").preprocess.std, std::vector<float>{0.27f});
}

TEST(HostileLoad, BatchNormStatisticsMustBeFiniteAndVarianceNotNegative) {
  const ModelCfg cfg = load_model_config(OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json");
  Clip m(cfg);
  m.init(1);
  const NamedTensors good = state_dict_copy(m);
  EXPECT_NO_THROW(load_state_dict(m, good, "good.pt"));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (auto [key, value, want] : std::vector<std::tuple<std::string, float, std::string>>{
           {"visual.bn1.running_var", -1.0f,
            "bad.pt: 'visual.bn1.running_var'[3] is -1; a BatchNorm variance must "
            "be finite and >= 0 (the embeddings would be NaN)"},
           {"visual.layer1.0.bn2.running_var", nan, "'visual.layer1.0.bn2.running_var'[3] is nan"},
           {"visual.bn1.running_mean", std::numeric_limits<float>::infinity(),
            "'visual.bn1.running_mean'[3] is inf; a BatchNorm mean must be finite"}}) {
    NamedTensors sd = good;
    for (auto& [k, t] : sd)
      if (k == key) t.f32()[3] = value;
    EXPECT_HAS(error_of([&] { load_state_dict(m, sd, "bad.pt"); }), want);
  }
}

TEST(HostileLoad, TokenizerIdsPastTheModelsVocabularyAreRefusedAtLoad) {
  // A SigLIP-named config whose tokenizer.json has more pieces than text_cfg.vocab_size: every
  // batch holding one such id failed with 500; now the model does not load.
  ModelCfg cfg = parse_model_config(kTinyCfg, "small-vocab");
  cfg.text.hf_tokenizer_name = "timm/ViT-B-16-SigLIP";
  const std::string tok = OPENCLIP_TEST_DIR "/text/data/spm/tokenizer.json";  // 1800 pieces
  cfg.text.vocab_size = 1000;
  std::string e = error_of([&] { model_tokenizer(cfg, tok); });
  EXPECT_HAS(e,
             "model small-vocab: its tokenizer timm/ViT-B-16-SigLIP gives ids up to 1799, but "
             "text_cfg.vocab_size is 1000 (ids must be below it): the tokenizer file " +
                 tok);
  cfg.text.vocab_size = 1800;
  EXPECT_EQ(model_tokenizer(cfg, tok)->id_limit(), 1800);
}

}  // namespace
}  // namespace oc
