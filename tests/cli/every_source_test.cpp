// One model source for every command: each command (train, eval, embed, classify, index build
// and search, serve, bench infer, the Python module) with each kind of source (a config and a
// weights file, a hub folder, local-dir:, hf-hub: as --model and as --pretrained, served by a
// fake hub on 127.0.0.1). A tiny model written here (model/weights.h) keeps every run short.
// Also: image-only commands on a SigLIP-tokenizer model whose tokenizer file exists nowhere, and
// every --flag an error names is a flag of that command.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "core/fs.h"
#include "hub/fake_hub.h"
#include "image/codec_internal.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc {
namespace {

const char* kTiny = R"({"embed_dim": 32, "vision_cfg": {"image_size": 32, "layers": 2, "width": 64,
  "head_width": 32, "patch_size": 8}, "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 48,
  "heads": 2, "layers": 2}})";
// A SigLIP-style text tower whose SentencePiece file is nowhere (no data folder, no hub repository).
const char* kTinySiglip = R"({"embed_dim": 32, "init_logit_bias": -10, "vision_cfg": {"image_size": 32,
  "layers": 1, "width": 64, "head_width": 32, "patch_size": 8}, "text_cfg": {"context_length": 16,
  "vocab_size": 32000, "width": 48, "heads": 2, "layers": 1, "hf_tokenizer_name": "timm/ViT-Tiny-SigLIP-absent",
  "tokenizer_kwargs": {"clean": "canonicalize"}}})";

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// A hub folder: open_clip_config.json + open_clip_model.safetensors, and three PNG images.
void make_repo(const std::string& dir, const char* cfg_json) {
  fs::make_dirs(dir + "/repo");
  fs::write_atomic(dir + "/repo/open_clip_config.json", std::string(R"({"model_cfg": )") + cfg_json + "}");
  fs::write_atomic(dir + "/tiny.json", std::string(cfg_json));
  Clip m(parse_model_config(cfg_json, "tiny"));
  m.init(3);
  save_weights(m, dir + "/repo/open_clip_model.safetensors");
}

struct Fixture {
  std::string dir;
  Fixture() {
    dir = test::fresh_dir("every_source");
    make_repo(dir, kTiny);
    fs::make_dirs(dir + "/siglip");
    make_repo(dir + "/siglip", kTinySiglip);
    fs::make_dirs(dir + "/images");
    std::string tsv = "filepath\ttitle\n";
    for (int i = 0; i < 3; ++i) {
      ImageU8 img{40 + 5 * i, 36, {}};
      img.rgb.resize(size_t(img.width) * img.height * 3);
      for (size_t k = 0; k < img.rgb.size(); ++k) img.rgb[k] = uint8_t((k * 37 + size_t(i) * 101) % 251);
      auto png = detail::encode_png(img);
      fs::write_atomic(dir + "/images/" + std::to_string(i) + ".png", std::span<const uint8_t>(png.value()));
      tsv += "images/" + std::to_string(i) + ".png\ta photo number " + std::to_string(i) + "\n";
    }
    fs::write_atomic(dir + "/data.tsv", tsv);
    fs::write_atomic(dir + "/texts.txt", std::string("a cat\na dog\n"));
  }
};

const Fixture& fixture() {
  static Fixture f;
  return f;
}

struct Case {
  std::string source, command;
};

std::string source_flags(const std::string& kind, const std::string& d) {
  if (kind == "file") return "--model " + d + "/tiny.json --pretrained " + d + "/repo/open_clip_model.safetensors";
  if (kind == "folder") return "--model " + d + "/repo";
  if (kind == "local-dir") return "--model local-dir:" + d + "/repo";
  if (kind == "hf-hub-model") return "--model hf-hub:test/tiny";
  return "--pretrained hf-hub:test/tiny";  // hf-hub-pretrained
}

class EverySource : public ::testing::TestWithParam<Case> {};

TEST_P(EverySource, CommandRuns) {
  const Case& c = GetParam();
  const std::string& d = fixture().dir;
  test::FakeHub hub;
  for (const char* f : {"open_clip_config.json", "open_clip_model.safetensors"})
    hub.files[std::string("test/tiny/") + f] = read_all(d + "/repo/" + f);
  const std::string work = test::fresh_dir("every_source_" + c.command + "_" + c.source);
  const std::string env = "HF_ENDPOINT=" + hub.endpoint() + " HF_HUB_CACHE=" + work + "/cache ";
  const std::string bin = env + test::openclip() + " ", src = source_flags(c.source, d);
  std::string cmd;
  if (c.command == "embed-images") cmd = bin + "embed " + src + " --images " + d + "/images --out " + work + "/e.npy";
  if (c.command == "embed-texts") cmd = bin + "embed " + src + " --texts " + d + "/texts.txt --out " + work + "/e.npy";
  if (c.command == "classify") cmd = bin + "classify " + src + " --image " + d + "/images/0.png --labels cat dog";
  if (c.command == "index")
    cmd = bin + "index build " + src + " --images " + d + "/images --out " + work + "/idx && " + bin + "index search " +
          work + "/idx --text cat";
  if (c.command == "eval") cmd = bin + "eval " + src + " --val-data " + d + "/data.tsv --batch-size 3 --workers 0";
  if (c.command == "train")
    cmd = bin + "train " + src + " --train-data " + d + "/data.tsv --batch-size 3 --epochs 1 --workers 0 --logs " +
          work + " --name run --save-frequency 0";
  if (c.command == "bench") cmd = bin + "bench infer " + src + " --steps 1 --warmup-steps 0 --batch-size 2";
  if (c.command == "serve")  // up, one embedding request, SIGTERM
    cmd = "(" + bin + "serve " + src + " --port 0 > " + work +
          "/serve.log 2>&1 & P=$!; for i in $(seq 600); do "
          "grep -q listening " +
          work +
          "/serve.log && break; kill -0 $P 2>/dev/null || break; sleep 0.1; done; "
          "PORT=$(grep -o '127.0.0.1:[0-9]*' " +
          work +
          "/serve.log | cut -d: -f2); "
          "curl -sf -X POST -H 'Content-Type: application/json' -d '{\"texts\": [\"a cat\"]}' "
          "http://127.0.0.1:$PORT/v1/embed/text; R=$?; kill $P; wait $P; cat " +
          work + "/serve.log; exit $R)";
  if (c.command == "python") {
    const std::string so_dir = std::string(OPENCLIP_BUILD_DIR) + "/python";  // the package openclip_cpp/
    std::string model = "\"" + d + "/tiny.json\", \"" + d + "/repo/open_clip_model.safetensors\"";
    if (c.source == "folder") model = "\"" + d + "/repo\"";
    if (c.source == "local-dir") model = "\"local-dir:" + d + "/repo\"";
    if (c.source == "hf-hub-model") model = "\"hf-hub:test/tiny\"";
    if (c.source == "hf-hub-pretrained") model = "\"ViT-B-32\", \"hf-hub:test/tiny\"";
    if (test::run("PYTHONPATH=" + so_dir + " /usr/bin/python3 -c 'import openclip_cpp'").status != 0)
      GTEST_SKIP() << "the Python module is not built in " << so_dir;
    cmd = env + "PYTHONPATH=" + so_dir + " /usr/bin/python3 -c 'import openclip_cpp as o; m = o.create_model(" + model +
          "); print(m.encode_text([\"a cat\"]).shape)'";
  }
  ASSERT_FALSE(cmd.empty()) << c.command;
  const test::Run r = test::run(cmd);
  EXPECT_EQ(r.status, 0) << cmd << "\n" << r.out;
  if (c.source.starts_with("hf-hub")) EXPECT_GT(hub.heads.load(), 0) << "no request reached the hub";
}

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const char* s : {"file", "folder", "local-dir", "hf-hub-model", "hf-hub-pretrained"})
    for (const char* c :
         {"embed-images", "embed-texts", "classify", "index", "eval", "train", "bench", "serve", "python"})
      v.push_back({s, c});
  return v;
}

INSTANTIATE_TEST_SUITE_P(CommandsTimesSources, EverySource, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string n = info.param.command + "_" + info.param.source;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

// The --flags an error message names are flags of the command that printed it.
void expect_flags_of(const std::string& command, const std::string& error) {
  const std::string help = test::run(test::openclip() + " " + command + " --help").out;
  std::set<std::string> named;
  const std::regex flag("--[a-z][a-z0-9-]+");
  for (auto it = std::sregex_iterator(error.begin(), error.end(), flag); it != std::sregex_iterator(); ++it)
    named.insert(it->str());
  for (const auto& f : named)
    EXPECT_NE(help.find(f + " "), std::string::npos) << command << " names " << f << ":\n" << error;
}

TEST(EverySourceSiglip, ImagesNeedNoTokenizerAndErrorsNameTheCommandsFlags) {
  const std::string d = fixture().dir + "/siglip";
  test::FakeHub hub;  // answers 404 for the tokenizer's repository
  const std::string work = test::fresh_dir("every_source_siglip");
  const std::string bin =
      "HF_ENDPOINT=" + hub.endpoint() + " HF_HUB_CACHE=" + work + "/cache " + test::openclip() + " ";
  const std::string w = d + "/repo/open_clip_model.safetensors";
  test::Run r = test::run(bin + "embed --model " + d + "/tiny.json --pretrained " + w + " --images " + fixture().dir +
                          "/images --out " + work + "/e.npy");
  EXPECT_EQ(r.status, 0) << r.out;
  r = test::run(bin + "index build --model " + d + "/repo --images " + fixture().dir + "/images --out " + work +
                "/idx");
  EXPECT_EQ(r.status, 0) << r.out;
  r = test::run(bin + "embed --model " + d + "/repo --texts " + fixture().dir + "/texts.txt --out " + work + "/t.npy");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("SentencePiece"), std::string::npos) << r.out;
  expect_flags_of("embed", r.out);
  r = test::run(bin + "classify --model " + d + "/repo --image " + fixture().dir + "/images/0.png --labels cat");
  EXPECT_NE(r.status, 0);
  expect_flags_of("classify", r.out);
  for (const std::string cmd :
       {"embed --images " + fixture().dir + "/images --out x.npy",
        "classify --image " + fixture().dir + "/images/0.png --labels x"}) {  // no weights at all
    r = test::run(bin + cmd + " --model " + d + "/tiny.json");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("needs --pretrained"), std::string::npos) << r.out;
    expect_flags_of(cmd.substr(0, cmd.find(' ')), r.out);
  }
}

}  // namespace
}  // namespace oc
