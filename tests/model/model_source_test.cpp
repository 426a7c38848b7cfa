// --model as a Hugging Face hub folder and --pretrained as one of OpenCLIP 2.24's or 3.3's
// tags: the config, the weights file and the preprocessing they resolve to, and the errors;
// every tag of a shipped config resolved through a fake hub (tests/hub/fake_hub.h).
#include "model/model_source.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "core/check.h"
#include "core/fs.h"
#include "hub/fake_hub.h"
#include "model/clip.h"
#include "model/pretrained_tags.h"
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
  const std::string commit(40, 'c');
  const std::string repo = cache + "/models--UCSC-VLAA--ViT-L-14-CLIPA-datacomp1B";
  const std::string snap = repo + "/snapshots/" + commit;
  fs::make_dirs(snap);
  fs::make_dirs(repo + "/refs");
  fs::write_atomic(repo + "/refs/main", commit);  // as huggingface_hub leaves it
  fs::write_atomic(snap + "/open_clip_pytorch_model.bin", std::string("weights"));
  ModelSource s = resolve_model_source("ViT-L-14-CLIPA", "DataComp1B", cache);  // _clean_tag: case-insensitive
  EXPECT_EQ(s.weights, snap + "/open_clip_pytorch_model.bin");
  EXPECT_EQ(s.preprocess.mean, (std::vector<float>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(s.preprocess.std, (std::vector<float>{0.229f, 0.224f, 0.225f}));
  EXPECT_EQ(s.preprocess.interpolation, "bilinear");
  EXPECT_EQ(s.preprocess.resize_mode, "squash");
  // Not in the cache and offline: the error says where it looked.
  setenv("HF_HUB_OFFLINE", "1", 1);
  std::string e = expect_error("ViT-L-14-CLIPA", "datacomp1b", cache + "/elsewhere");
  unsetenv("HF_HUB_OFFLINE");
  EXPECT_NE(e.find("HF_HUB_OFFLINE"), std::string::npos) << e;
  EXPECT_NE(e.find("UCSC-VLAA/ViT-L-14-CLIPA-datacomp1B"), std::string::npos) << e;
  // An unknown tag lists the model's known ones.
  e = expect_error("ViT-B-32", "laion9b");
  EXPECT_NE(e.find("laion2b_s34b_b79k"), std::string::npos) << e;
  EXPECT_NE(e.find("openai"), std::string::npos) << e;
}

// The table holds every tag of 2.24 and 3.3 (scripts/gen_pretrained_tags.py's counts), each
// with a download source; 3.3's moved tags keep 2.24's repository for a cache 2.24 filled.
TEST(ModelSource, TagTableHasEveryTagOf224And33) {
  int both = 0, new33 = 0, moved = 0;
  for (const PretrainedTag& t : all_pretrained_tags()) {
    EXPECT_EQ(find_pretrained_tag(t.model, t.tag), &t) << t.model << " " << t.tag;
    EXPECT_TRUE(*t.hf_hub || *t.url) << t.model << " " << t.tag;
    (std::string(t.since) == "3.3" ? new33 : both)++;
    if (*t.hf_hub_224 && std::string(t.hf_hub) != t.hf_hub_224) ADD_FAILURE() << "2.24 repo changed: " << t.tag;
    if (std::string(t.since) == "2.24" && !*t.hf_hub_224 && std::string(t.hf_hub).starts_with("timm/")) ++moved;
  }
  EXPECT_EQ(both, 121);
  EXPECT_EQ(new33, 75);
  EXPECT_EQ(moved, 36);
  int shipped = 0;  // tags of a config shipped here
  for (const PretrainedTag& t : all_pretrained_tags()) {
    try {
      (void)load_model_config(t.model);
      ++shipped;
    } catch (const Error&) {
    }
  }
  // The docs' figures are these counts (README's opening paragraph, docs/HUB.md's Tags section).
  const std::string readme = fs::read_text(OPENCLIP_SOURCE_DIR "/README.md").value();
  const std::string hub_doc = fs::read_text(OPENCLIP_SOURCE_DIR "/docs/HUB.md").value();
  const int total = both + new33;
  EXPECT_NE(readme.find(std::to_string(shipped) + " of the " + std::to_string(total)), std::string::npos);
  EXPECT_NE(
      hub_doc.find(std::to_string(total) + " (model, tag) pairs, " + std::to_string(both) + " in both releases\nand " +
                   std::to_string(new33) + " new in 3.3; " + std::to_string(moved) + " of the 2.24 tags"),
      std::string::npos);
  const PretrainedTag* openai = find_pretrained_tag("ViT-B-32", "openai");
  ASSERT_NE(openai, nullptr);
  EXPECT_EQ(std::string(openai->hf_hub), "timm/vit_base_patch32_clip_224.openai/");  // 3.3 prefers the hub
  EXPECT_NE(std::string(openai->url).find("openaipublic"), std::string::npos);
}

// Every tag of every config shipped here downloads through the hub protocol (a fake hub
// answering any repository's file) into the cache, safetensors first, as OpenCLIP 3.3.
TEST(ModelSource, EveryTagOfAShippedConfigResolvesThroughTheHub) {
  test::FakeHub hub;
  std::vector<std::string> asked;
  hub.behave = [&](const test::HubRequest& r, int fd) {
    if (r.method == "HEAD") asked.push_back(r.path);
    const std::string body = "w" + r.path;  // a distinct small file per repository and name
    const std::string h = "HTTP/1.1 200 OK\r\nX-Repo-Commit: " + hub.commit + "\r\nETag: \"" +
                          test::FakeHub::sha256(body) + "\"\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\nConnection: close\r\n\r\n";
    test::FakeHub::send_all(fd, r.method == "HEAD" ? h : h + body);
    return true;
  };
  const std::string cache = test::fresh_dir("tag_hub_cache");
  setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
  int resolved = 0;
  std::set<std::string> repos;
  for (const PretrainedTag& t : all_pretrained_tags()) {
    try {
      (void)load_model_config(t.model);
    } catch (const Error&) {
      continue;  // a config not shipped here
    }
    const ModelSource s = resolve_model_source(t.model, t.tag, cache);
    ASSERT_TRUE(fs::exists(s.weights)) << t.model << " " << t.tag;
    EXPECT_NE(s.weights.find("open_clip_model.safetensors"), std::string::npos) << s.weights;
    EXPECT_EQ(s.preprocess.interpolation, t.interpolation);
    repos.insert(t.hf_hub);
    ++resolved;
  }
  unsetenv("HF_ENDPOINT");
  EXPECT_EQ(resolved, 137);  // 106 before EVA02 (3), the SigLIP2 configs and ViT-SO400M-14-SigLIP-378 (16), ConvNeXt (12)
  // One HEAD per repository (the safetensors name answered; a repository two tags share, such
  // as RN50's and RN50-quickgelu's openai, is found in the cache the second time).
  EXPECT_EQ(asked.size(), repos.size());
}

}  // namespace
}  // namespace oc
