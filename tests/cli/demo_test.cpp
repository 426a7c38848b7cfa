// `openclip demo` end to end on a slice of the real Fashion-MNIST (Debian's
// dataset-fashion-mnist, installed by scripts/setup.sh): import, training through the train
// program, per-epoch zero-shot results, the predictions file, the report, the JSON line,
// a second run reusing the import, and bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "image/codec.h"
#include "model/weights.h"
#include "same_weights.h"
#include "test_util.h"

namespace oc {
namespace {

using test::run;

// The default (fixed-recipe) mode, shrunk: --max-passes 1 over a 512-image slice caps the
// recipe's samples at 512.
std::string demo_cmd(const std::string& dir, const std::string& name) {
  return test::openclip() + " demo --out '" + dir + "' --name " + name +
         " --limit 512 --max-passes 1 --epochs 2 --batch-size 64 --model test-tiny --warmup 2 --lr 1e-3 --threads 1";
}

nlohmann::json last_json_line(const std::string& out) {
  const size_t b = out.rfind("\n{");
  return nlohmann::json::parse(out.substr(b == std::string::npos ? 0 : b + 1));
}

nlohmann::json recipe_file(const std::string& file) {
  return nlohmann::json::parse(fs::read_text(OPENCLIP_SOURCE_DIR "/configs/recipes/" + file).value());
}
// The default built-in recipe is the source tree's configs/recipes/fmnist-demo-v3.json.
nlohmann::json source_recipe() { return recipe_file("fmnist-demo-v3.json"); }

// A recipe for test-tiny on a slice: every field, as the file format requires.
nlohmann::json tiny_recipe() {
  return {{"name", "tiny-test-recipe"}, {"model", "test-tiny"}, {"batch_size", 64},   {"lr", 2e-3},
          {"wd", 0.05},                 {"warmup", 2},          {"lr_scheduler", "cosine"},
          {"precision", "fp32"},        {"aug_cfg", "scale=(0.8,1.0)"}, {"samples", 256},
          {"epochs", 2},                {"max_passes", 1},      {"seed", 3},
          {"measured", {{"train_seconds", 1.0}, {"samples", 256}, {"cpu", "a test"}}}};
}

TEST(Demo, RunsEndToEndAndWritesEverythingTheReportNeeds) {
  const std::string dir = test::fresh_dir("demo_e2e");
  auto r = run(demo_cmd(dir, "first"));
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = last_json_line(r.out);
  const std::string run_dir = dir + "/logs/first";
  EXPECT_EQ(j["run_dir"], run_dir);
  EXPECT_EQ(j["report"], run_dir + "/report.html");
  EXPECT_EQ(j["samples"], 512);
  EXPECT_GT(j["train_seconds"].get<double>(), 0.0);
  EXPECT_TRUE(j.contains("seconds_to_85"));
  EXPECT_TRUE(j.contains("seconds_to_90"));
  EXPECT_GT(j["train_cpu_seconds"].get<double>(), 0.0);
  // The default recipe is the built-in file's, named in the JSON line and params.txt (the report's source).
  const std::string recipe = source_recipe()["name"];
  EXPECT_EQ(j["recipe"], recipe);
  EXPECT_FALSE(j["cpu"].get<std::string>().empty());
  const std::string params = fs::read_text(run_dir + "/params.txt").value();
  EXPECT_NE(params.find("demo_recipe: " + recipe + "\n"), std::string::npos) << params;
  EXPECT_NE(params.find("demo_cpu: " + j["cpu"].get<std::string>() + "\n"), std::string::npos) << params;
  const double top1 = j["zeroshot_top1"], top5 = j["zeroshot_top5"];
  EXPECT_GE(top5, top1);
  EXPECT_LE(top5, 1.0);

  // Per-epoch zero-shot results with the epoch and training time (for time-to-accuracy).
  std::string results = fs::read_text(run_dir + "/checkpoints/results.jsonl").value();
  auto first = nlohmann::json::parse(results.substr(0, results.find('\n')));
  EXPECT_EQ(first["epoch"], 1);
  EXPECT_GT(first["train_seconds"].get<double>(), 0.0);
  EXPECT_TRUE(first.contains("fashion-mnist-zeroshot-top1"));
  EXPECT_TRUE(fs::exists(run_dir + "/checkpoints/epoch_2.pt"));

  // The predictions file: the test slice is the first 512 test images.
  auto p = nlohmann::json::parse(fs::read_text(run_dir + "/zeroshot_fashion-mnist.json").value());
  EXPECT_EQ(p["samples"], 512);
  EXPECT_DOUBLE_EQ(p["top1"].get<double>(), top1);
  ASSERT_EQ(p["classnames"].size(), 10u);
  ASSERT_EQ(p["confusion"].size(), 10u);
  int64_t total = 0, diag = 0;
  for (size_t t = 0; t < 10; ++t)
    for (size_t q = 0; q < 10; ++q) total += p["confusion"][t][q].get<int64_t>(), diag += t == q ? p["confusion"][t][q].get<int64_t>() : 0;
  EXPECT_EQ(total, 512);
  EXPECT_NEAR(double(diag) / 512.0, top1, 1e-12);
  ASSERT_EQ(p["examples"].size(), 40u);  // 4 per class
  const auto& ex = p["examples"][0];
  ASSERT_EQ(ex["top"].size(), 3u);
  float prev = 2.0f;
  for (auto& t : ex["top"]) {  // sorted probabilities with the caption of the first eval template
    EXPECT_LE(t["prob"].get<float>(), prev);
    prev = t["prob"].get<float>();
    EXPECT_NE(t["caption"].get<std::string>().find(t["name"].get<std::string>()), std::string::npos);
  }
  // The example image decodes as a 32x32 PNG (test-tiny's input size).
  const std::string png = dir + "/ex.png";
  fs::write_atomic(dir + "/ex.b64", ex["png_base64"].get<std::string>());
  ASSERT_EQ(std::system(("base64 -d '" + dir + "/ex.b64' > '" + png + "'").c_str()), 0);
  auto img = decode_image_file(png);
  ASSERT_TRUE(img.ok()) << img.error();
  EXPECT_EQ(img.value().width, 32);
  EXPECT_EQ(img.value().height, 32);

  std::string html = fs::read_text(run_dir + "/report.html").value();
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("<dd>" + recipe + "</dd>"), std::string::npos) << "the report names the recipe";

  // A second run reuses the imported shards and, with the same recipe, gives the same model
  // bit for bit and the same results.
  auto again = run(demo_cmd(dir, "second"));
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("(already imported)"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("Demo recipe:"), std::string::npos) << again.out;
  test::expect_same_weights(run_dir + "/checkpoints/epoch_2.pt", dir + "/logs/second/checkpoints/epoch_2.pt",
                            "between two default runs");
  nlohmann::json j2 = last_json_line(again.out);
  EXPECT_EQ(j2["zeroshot_top1"], j["zeroshot_top1"]);
  EXPECT_EQ(j2["zeroshot_top5"], j["zeroshot_top5"]);
  EXPECT_EQ(j2["samples"], j["samples"]);
}

// Without flags, every setting of the run is the recipe file's; a flag given overrides its field.
TEST(Demo, TakesItsSettingsFromTheRecipeFileAndFlagsOverrideThem) {
  const std::string dir = test::fresh_dir("demo_recipe");
  const std::string file = dir + "/tiny.json";
  fs::write_atomic(file, tiny_recipe().dump(2));
  const std::string cmd = test::openclip() + " demo --out '" + dir + "' --recipe '" + file +
                          "' --limit 512 --threads 1 --no-report";
  auto r = run(cmd + " --name from-file");
  ASSERT_EQ(r.status, 0) << r.out;
  nlohmann::json j = last_json_line(r.out);
  EXPECT_EQ(j["recipe"], "tiny-test-recipe");
  EXPECT_EQ(j["model"], "test-tiny");
  EXPECT_EQ(j["samples"], 256);
  std::string params = fs::read_text(dir + "/logs/from-file/params.txt").value();
  for (const char* line : {"batch_size: 64\n", "lr: 0.002\n", "wd: 0.05\n", "warmup: 2\n", "epochs: 2\n",
                           "seed: 3\n", "precision: fp32\n", "aug_cfg: scale=(0.8,1.0)\n", "lr_scheduler: cosine\n"})
    EXPECT_NE(params.find(line), std::string::npos) << line << params;

  r = run(cmd + " --name flags --batch-size 32 --lr 1e-3 --epochs 1");
  ASSERT_EQ(r.status, 0) << r.out;
  j = last_json_line(r.out);
  EXPECT_EQ(j["samples"], 256);
  params = fs::read_text(dir + "/logs/flags/params.txt").value();
  for (const char* line : {"batch_size: 32\n", "lr: 0.001\n", "epochs: 1\n", "wd: 0.05\n"})
    EXPECT_NE(params.find(line), std::string::npos) << line << params;
}

// Every built-in recipe, with its own model (the fixed run shrunk to two steps on a slice by
// --limit and --max-passes), trains the same model bit for bit on two runs: the determinism
// the fixed recipe promises, for each image tower family it uses (fmnist-demo-v1: the ViT;
// fmnist-demo-v2 and v3: the ModifiedResNet, whose BatchNorm statistics are in the checkpoint too).
// Across CPU kinds the kernels differ (oneDNN picks AVX2 or AVX-512 code); their results are
// held to the reference by the ops and model tests (tests/ops/grad_conv_test.cpp,
// tests/model/resnet_test.cpp), not bitwise.
TEST(Demo, EachBuiltInRecipeTrainsTheSameModelOnEveryRun) {
  const std::string dir = test::fresh_dir("demo_recipes");
  for (const char* file : {"fmnist-demo.json", "fmnist-demo-v2.json", "fmnist-demo-v3.json"}) {
    const nlohmann::json rc = recipe_file(file);
    const std::string name = rc["name"];
    const std::string cmd = test::openclip() + " demo --out '" + dir + "' --recipe " + name + " --limit " +
                            std::to_string(2 * rc["batch_size"].get<int>()) +
                            " --max-passes 1 --epochs 1 --threads 2 --no-report --name ";
    auto a = run(cmd + name + "-a");
    ASSERT_EQ(a.status, 0) << a.out;
    auto b = run(cmd + name + "-b");
    ASSERT_EQ(b.status, 0) << b.out;
    const nlohmann::json ja = last_json_line(a.out), jb = last_json_line(b.out);
    EXPECT_EQ(ja["recipe"], name);
    EXPECT_EQ(ja["model"], rc["model"]);
    EXPECT_EQ(ja["samples"], 2 * rc["batch_size"].get<int>());
    test::expect_same_weights(dir + "/logs/" + name + "-a/checkpoints/epoch_1.pt",
                              dir + "/logs/" + name + "-b/checkpoints/epoch_1.pt", "between two runs of " + name);
    EXPECT_EQ(ja["zeroshot_top1"], jb["zeroshot_top1"]);
  }
}

TEST(Demo, BadInputGivesClearErrors) {
  const std::string dir = test::fresh_dir("demo_bad");
  auto r = run(test::openclip() + " demo --out '" + dir + "' --minutes 0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--minutes must be positive"), std::string::npos) << r.out;
  r = run(test::openclip() + " demo --out '" + dir + "' --source " + dir + "/nowhere --limit 64 --samples 64");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(dir + "/nowhere"), std::string::npos) << r.out;
  r = run(test::openclip() + " demo --out '" + dir + "' --precision fp64");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("fp64"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/fmnist")) << "a bad flag must fail before the import";
  // A recipe file with a misspelt field fails before the import, naming the field and the file.
  nlohmann::json bad = tiny_recipe();
  bad.erase("lr");
  bad["lr_peak"] = 1e-3;
  fs::write_atomic(dir + "/bad.json", bad.dump());
  r = run(test::openclip() + " demo --out '" + dir + "' --recipe '" + dir + "/bad.json'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("lr_peak"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(dir + "/bad.json"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/fmnist"));
  bad = tiny_recipe();
  bad["aug_cfg"] = "scale=(0.8";
  fs::write_atomic(dir + "/bad_aug.json", bad.dump());
  r = run(test::openclip() + " demo --out '" + dir + "' --recipe '" + dir + "/bad_aug.json'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("aug_cfg"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/fmnist"));
  // A recipe naming a model that is not a built-in config nor a file, or a config of a family
  // openclip-cpp does not build or train, fails before the import, naming the recipe's field.
  bad = tiny_recipe();
  bad["model"] = "convnext-tiny";
  fs::write_atomic(dir + "/bad_model.json", bad.dump());
  r = run(test::openclip() + " demo --out '" + dir + "' --recipe '" + dir + "/bad_model.json'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(dir + "/bad_model.json: \"model\" convnext-tiny: unknown model"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/fmnist"));
  nlohmann::json cfg =
      nlohmann::json::parse(fs::read_text(OPENCLIP_SOURCE_DIR "/configs/models/test-tiny.json").value());
  cfg["vision_cfg"] = {{"timm_model_name", "resnet50d"}, {"image_size", 32}};
  fs::write_atomic(dir + "/resnet50d.json", cfg.dump());
  bad["model"] = dir + "/resnet50d.json";
  fs::write_atomic(dir + "/bad_tower.json", bad.dump());
  r = run(test::openclip() + " demo --out '" + dir + "' --recipe '" + dir + "/bad_tower.json'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(dir + "/bad_tower.json: \"model\" " + dir + "/resnet50d.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("timm_model_name"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/fmnist"));
  r = run(test::openclip() + " demo --out '" + dir + "' --model " + dir + "/resnet50d.json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--model " + dir + "/resnet50d.json"), std::string::npos) << r.out;
  r = run(test::openclip() + " demo --out '" + dir + "' --recipe fmnist-demo-v9");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--recipe fmnist-demo-v9: not a built-in recipe (fmnist-demo-v3, fmnist-demo-v2, fmnist-demo-v1)"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir + "/fmnist"));
  r = run(test::openclip() + " demo --minuts 3");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--minutes"), std::string::npos) << r.out;  // the nearest flag is suggested
}

}  // namespace
}  // namespace oc
