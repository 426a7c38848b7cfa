// --model as a Hugging Face hub folder and --pretrained as one of OpenCLIP 2.24's tags:
// the config, the weights file and the preprocessing they resolve to, and the errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/fs.h"
#include "model/clip.h"
#include "model/model_source.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc {
namespace {

const char* kTinyCfg = R"({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 2, "width": 64,
  "head_width": 32, "patch_size": 8}, "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 48,
  "heads": 2, "layers": 2}})";

std::string expect_error(const std::string& model, const std::string& pretrained, const std::string& cache = "") {
  try {
    resolve_model_source(model, pretrained, cache);
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for --model " << model << " --pretrained " << pretrained;
  return "";
}

TEST(ModelSource, HubFolderGivesConfigWeightsAndPreprocessing) {
  const std::string dir = test::fresh_dir("hub_folder") + "/tiny-hub";
  fs::make_dirs(dir);
  fs::write_atomic(dir + "/open_clip_config.json",
                   std::string(R"({"model_cfg": )") + kTinyCfg +
                       R"(, "preprocess_cfg": {"mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5],
                       "interpolation": "bilinear", "resize_mode": "squash"}})");
  Clip m(parse_model_config(kTinyCfg, "tiny"));
  m.init(7);
  save_weights(m, dir + "/open_clip_model.safetensors");
  ModelSource s = resolve_model_source(dir, "");
  EXPECT_EQ(s.cfg.embed_dim, 32);
  EXPECT_EQ(s.cfg.vision.layers, 2);
  EXPECT_EQ(s.weights, dir + "/open_clip_model.safetensors");
  EXPECT_EQ(s.preprocess.mean, (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(s.preprocess.interpolation, "bilinear");
  EXPECT_EQ(s.preprocess.resize_mode, "squash");
  Clip loaded(s.cfg);
  load_weights(loaded, s.weights);  // the folder's weights fit its config
  // --pretrained FILE wins over the folder's weights (OpenCLIP: pretrained is loaded instead).
  EXPECT_EQ(resolve_model_source(dir, dir + "/open_clip_model.safetensors").weights,
            dir + "/open_clip_model.safetensors");
}

TEST(ModelSource, BadHubFoldersNameTheFileAndKey) {
  const std::string root = test::fresh_dir("hub_bad");
  fs::make_dirs(root + "/empty");
  std::string e = expect_error(root + "/empty", "");
  EXPECT_NE(e.find(root + "/empty/open_clip_config.json"), std::string::npos) << e;
  fs::make_dirs(root + "/nocfg");
  fs::write_atomic(root + "/nocfg/open_clip_config.json", std::string(R"({"preprocess_cfg": {}})"));
  e = expect_error(root + "/nocfg", "");
  EXPECT_NE(e.find("open_clip_config.json"), std::string::npos) << e;
  EXPECT_NE(e.find("model_cfg"), std::string::npos) << e;
  fs::make_dirs(root + "/badcfg");
  fs::write_atomic(root + "/badcfg/open_clip_config.json",
                   std::string(R"({"model_cfg": {"embed_dim": "wide", "vision_cfg": {}, "text_cfg": {}}})"));
  e = expect_error(root + "/badcfg", "");
  EXPECT_NE(e.find("open_clip_config.json"), std::string::npos) << e;
  EXPECT_NE(e.find("embed_dim"), std::string::npos) << e;
  fs::make_dirs(root + "/badpre");
  fs::write_atomic(root + "/badpre/open_clip_config.json", std::string(R"({"model_cfg": )") + kTinyCfg +
                                                               R"(, "preprocess_cfg": {"resize_mode": "crop"}})");
  e = expect_error(root + "/badpre", "");
  EXPECT_NE(e.find("preprocess_cfg.resize_mode"), std::string::npos) << e;
}

TEST(ModelSource, PretrainedTagAppliesItsPreprocessingAndReadsTheCache) {
  // A CLIPA tag (ImageNet mean/std, bilinear, squash) found in a Hugging Face cache layout.
  const std::string cache = test::fresh_dir("hf_cache");
  const std::string snap = cache + "/models--UCSC-VLAA--ViT-L-14-CLIPA-datacomp1B/snapshots/0123abc";
  fs::make_dirs(snap);
  fs::write_atomic(snap + "/open_clip_pytorch_model.bin", std::string("weights"));
  ModelSource s = resolve_model_source("ViT-L-14-CLIPA", "DataComp1B", cache);  // _clean_tag: case-insensitive
  EXPECT_EQ(s.weights, snap + "/open_clip_pytorch_model.bin");
  EXPECT_EQ(s.preprocess.mean, (std::vector<float>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(s.preprocess.std, (std::vector<float>{0.229f, 0.224f, 0.225f}));
  EXPECT_EQ(s.preprocess.interpolation, "bilinear");
  EXPECT_EQ(s.preprocess.resize_mode, "squash");
  // Not in the cache: the error says where it looked and that nothing is downloaded.
  std::string e = expect_error("ViT-L-14-CLIPA", "datacomp1b", cache + "/elsewhere");
  EXPECT_NE(e.find("downloads nothing"), std::string::npos) << e;
  EXPECT_NE(e.find("models--UCSC-VLAA--ViT-L-14-CLIPA-datacomp1B"), std::string::npos) << e;
  // An unknown tag lists the model's known ones.
  e = expect_error("ViT-B-32", "laion9b");
  EXPECT_NE(e.find("laion2b_s34b_b79k"), std::string::npos) << e;
  EXPECT_NE(e.find("openai"), std::string::npos) << e;
}

}  // namespace
}  // namespace oc
