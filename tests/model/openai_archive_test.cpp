// OpenAI's TorchScript checkpoints (torch.jit.save archives) against OpenCLIP 2.24.0's
// load_openai_model on the same file: a QuickGELU ViT saved as OpenAI's files are (the
// convert_weights_to_fp16 set in fp16) and a ModifiedResNet saved in fp32 (so the fp16
// rounding load_openai_model applies to that set is exercised), both written by
// torch.jit.save(torch.jit.script(model)) (tests/reference/pretrained_ref.py). Also the bf16
// set of --precision bf16 against convert_weights_to_lp, ViT and ModifiedResNet.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/check.h"
#include "core/fs.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/model_source.h"
#include "model/precision.h"
#include "model/weights.h"
#include "model/weights_openai.h"
#include "test_util.h"

namespace oc {
namespace {

std::vector<float> read_f32(const std::string& path) {
  const std::string bytes = fs::read_text(path).value();
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

double min_row_cosine(const std::vector<float>& a, const std::vector<float>& b, size_t dim) {
  double worst = 1;
  for (size_t r = 0; r * dim < b.size(); ++r) {
    double d = 0, na = 0, nb = 0;
    for (size_t i = r * dim; i < (r + 1) * dim; ++i)
      d += double(a[i]) * b[i], na += double(a[i]) * a[i], nb += double(b[i]) * b[i];
    worst = std::min(worst, d / std::sqrt(na * nb));
  }
  return worst;
}

double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < b.size(); ++i)
    d = std::max(d, double(std::fabs(a[i] - b[i]))), m = std::max(m, double(std::fabs(b[i])));
  return d / m;
}

std::string jit_archive(const std::string& config, const std::string& precision) {
  const std::string dir = test::fresh_dir("openai_archive");
  auto r = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/pretrained_ref.py jit " + config + " " +
                     dir + " " + precision);
  EXPECT_EQ(r.status, 0) << r.out;
  return dir;
}

void expect_like_load_openai_model(const std::string& config, const std::string& precision) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = jit_archive(config, precision);
  ModelCfg cfg = load_model_config(config);
  // The config without QuickGELU (as --model ViT-B-32 with --pretrained openai): the source
  // switches it on, as load_openai_model builds QuickGELU whatever the name.
  std::string json = fs::read_text(config).value();
  json.replace(json.find("\"quick_gelu\": true"), 18, "\"quick_gelu\": false");
  fs::write_atomic(dir + "/no-quickgelu.json", json);
  ModelSource src = resolve_model_source(dir + "/no-quickgelu.json", dir + "/m.pt");
  EXPECT_TRUE(src.cfg.quick_gelu);
  Clip m(src.cfg);
  load_weights(m, src.weights);
  m.plan_inference(2);
  std::vector<int32_t> tokens(size_t(2 * cfg.text.context_length));
  {
    const std::string t = fs::read_text(dir + "/tokens.i32").value();
    ASSERT_EQ(t.size(), tokens.size() * 4);
    std::memcpy(tokens.data(), t.data(), t.size());
  }
  const auto images = read_f32(dir + "/images.f32");
  std::vector<float> img(size_t(2 * cfg.embed_dim)), txt(img.size());
  m.encode_image(images.data(), 2, img.data(), /*normalize=*/false);
  m.encode_text(tokens.data(), 2, txt.data(), /*normalize=*/false);
  // The bar: cosine >= 0.9999. Tighter: max |diff| / max |OpenCLIP| < 1e-4, as the
  // forward tests (fp32 with other summation orders: ~1e-6), which a missing fp16 rounding of
  // the convert_weights_to_fp16 set (~1e-3 relative per weight) or GELU for QuickGELU fails.
  const auto ri = read_f32(dir + "/image.f32"), rt = read_f32(dir + "/text.f32");
  const double ci = min_row_cosine(img, ri, size_t(cfg.embed_dim)), ct = min_row_cosine(txt, rt, size_t(cfg.embed_dim));
  EXPECT_GE(ci, 0.9999);
  EXPECT_GE(ct, 0.9999);
  const double di = rel_diff(img, ri), dt = rel_diff(txt, rt);
  EXPECT_LT(di, 1e-4);
  EXPECT_LT(dt, 1e-4);
  std::printf("[ %s %s ] vs load_openai_model: cosine image %.8f text %.8f, rel diff image %.3g text %.3g\n",
              cfg.name.c_str(), precision.c_str(), ci, ct, di, dt);
}

TEST(OpenAiArchive, VitSavedAsOpenAiMatchesLoadOpenaiModel) {
  expect_like_load_openai_model(OPENCLIP_TEST_DIR "/model/configs/tiny-openai-vit.json", "fp16");
}

TEST(OpenAiArchive, ModifiedResNetInFp32MatchesLoadOpenaiModel) {
  expect_like_load_openai_model(OPENCLIP_TEST_DIR "/model/configs/tiny-openai-rn.json", "fp32");
}

TEST(OpenAiArchive, ConfigThatDiffersIsNamed) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = jit_archive(OPENCLIP_TEST_DIR "/model/configs/tiny-openai-vit.json", "fp16");
  ModelCfg cfg = load_model_config(OPENCLIP_TEST_DIR "/model/configs/tiny-openai-vit.json");
  cfg.text.layers = 3;
  Clip m(cfg);
  try {
    load_weights(m, dir + "/m.pt");
    FAIL() << "a 3-layer text tower took 2-layer weights";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("text_cfg.layers = 2 (from transformer.resblocks.*)"), std::string::npos)
        << e.what();
  }
}

// --pretrained openai finds the file where OpenCLIP's download put it (--cache-dir, else
// ~/.cache/clip, under the URL's basename) and reads nothing from the network; the config is
// switched to QuickGELU; a file whose shapes are not the config's is refused by field.
TEST(OpenAiArchive, PretrainedOpenaiTagReadsTheDownloadCache) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = jit_archive(OPENCLIP_TEST_DIR "/model/configs/tiny-openai-vit.json", "fp16");
  const std::string cache = test::fresh_dir("openai_cache");
  std::filesystem::copy_file(dir + "/m.pt", cache + "/ViT-B-32.pt");
  ModelSource src = resolve_model_source("ViT-B-32", "openai", cache);
  EXPECT_EQ(src.weights, cache + "/ViT-B-32.pt");
  EXPECT_TRUE(src.cfg.quick_gelu);
  EXPECT_EQ(src.preprocess.source, "pretrained tag ViT-B-32/openai");
  try {
    check_openai_config(src.cfg, read_state_dict(src.weights), src.weights);
    FAIL() << "the tiny archive passed for ViT-B-32";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("vision_cfg.width = 64 (from visual.conv1.weight), but model ViT-B-32 has 768"),
        std::string::npos)
        << e.what();
  }
}

std::set<std::string> ref_lp_set(const std::string& config) {
  auto r = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/pretrained_ref.py lp-set " + config);
  EXPECT_EQ(r.status, 0) << r.out;
  std::set<std::string> names;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line.find(' ') == std::string::npos) names.insert(line);
  return names;
}

// --precision bf16 keeps exactly the tensors convert_weights_to_lp casts (for ModifiedResNet:
// every Conv2d and the attention pool's Linears, not the BatchNorms).
void expect_lp_set(const std::string& config) {
  OC_NEED_OPEN_CLIP();
  const std::set<std::string> want = ref_lp_set(config);
  ASSERT_FALSE(want.empty());
  Clip m(load_model_config(config));
  std::set<std::string> ours;
  for (const ParamInfo& p : m.table().params)
    if (is_lp_param(p.name)) ours.insert(p.name);
  for (const auto& n : want) EXPECT_TRUE(ours.count(n)) << "OpenCLIP casts " << n << ", we do not";
  for (const auto& n : ours) EXPECT_TRUE(want.count(n)) << "we round " << n << ", OpenCLIP does not";
  std::printf("[ %s ] %zu tensors in the bf16 set\n", config.c_str(), want.size());
}

TEST(Bf16Set, ModifiedResNetAsConvertWeightsToLp) { expect_lp_set(OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json"); }
TEST(Bf16Set, VitAsConvertWeightsToLp) { expect_lp_set(OPENCLIP_SOURCE_DIR "/configs/models/test-tiny.json"); }
TEST(Bf16Set, ClipaVitAsConvertWeightsToLp) { expect_lp_set(OPENCLIP_TEST_DIR "/model/configs/tiny-clipa.json"); }

}  // namespace
}  // namespace oc
