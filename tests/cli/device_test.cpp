// --device on the commands and the backend list of `openclip info`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "test_util.h"
#include "tiny_model_files.h"

namespace oc::test {
namespace {

TEST(CliDevice, InfoListsRefAndCpu) {
  ::oc::test::Run r = run(openclip() + " info --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["backends"].size(), 2u) << r.out;
  EXPECT_EQ(j["backends"][0]["name"], "ref");
  EXPECT_EQ(j["backends"][1]["name"], "cpu");
  EXPECT_TRUE(j["backends"][1]["available"].get<bool>());
  // The attention kernel amp_bf16 / int8 run: which one depends on the CPU, and it is named,
  // also in the table.
  const std::string attn = j["kernels"]["attention_bf16"].get<std::string>();
  EXPECT_TRUE(attn == "amx" || attn == "avx512" || attn == "sgemm") << attn;
  ::oc::test::Run table = run(openclip() + " info");
  EXPECT_NE(table.out.find("attention kernel: " + attn), std::string::npos) << table.out;
  // OPENCLIP_ATTENTION caps it (sgemm runs everywhere); a bad value is refused by name.
  r = run("OPENCLIP_ATTENTION=sgemm " + openclip() + " info --json");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kernels"]["attention_bf16"], "sgemm") << r.out;
  r = run("OPENCLIP_ATTENTION=fast " + openclip() + " info --json");
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("OPENCLIP_ATTENTION=fast"), std::string::npos) << r.out;
}

TEST(CliDevice, UnknownDeviceListsTheAvailableOnes) {
  for (const char* cmd : {" bench train --model test-tiny --batch-size 2 --steps 1 --device tpu",
                          " train --model test-tiny --train-data x.csv --device tpu"}) {
    ::oc::test::Run r = run(openclip() + cmd);
    EXPECT_NE(r.status, 0) << cmd;
    EXPECT_NE(r.out.find("unknown device 'tpu'; available: ref, cpu"), std::string::npos) << cmd << "\n" << r.out;
  }
}

TEST(CliDevice, BenchRunsOnRefAndCpuWithTheSameLoss) {
  double loss[2];
  const char* dev[2] = {"ref", "cpu"};
  for (int i = 0; i < 2; ++i) {
    ::oc::test::Run r =
        run(openclip() + " bench train --model test-tiny --precision fp32 --batch-size 4 --steps 1 --json --device " +
            dev[i]);
    ASSERT_EQ(r.status, 0) << r.out;
    loss[i] = nlohmann::json::parse(r.out.substr(r.out.find('{')))["loss"].get<double>();
  }
  // The same synthetic batch and weights; fp32 on both (see tests/model/backend_step_test.cpp).
  EXPECT_NEAR(loss[0], loss[1], 1e-5 * std::abs(loss[0]));
}

// Every command that loads a model for inference takes --device to the backend registry
// (src/model/inference.h): an unknown name is refused listing the available ones, and --device
// cuda, on a build without CUDA or a machine without a GPU, says which of the two is missing.
TEST(CliDevice, EveryInferenceCommandHonoursDevice) {
  const TinyModelFiles f = make_tiny_model_files("cli_device");
  Rng rng(1);
  fs::make_dirs(f.dir + "/img");
  fs::write_atomic(f.dir + "/img/a.png", std::span<const uint8_t>(random_png(rng, 40, 30)));
  fs::write_atomic(f.dir + "/t.txt", std::string("a photo\n"));
  fs::write_atomic(f.dir + "/val.csv", std::string("filepath\ttitle\n" + f.dir + "/img/a.png\ta photo\n"));
  const std::string m = " --model test-tiny --pretrained " + f.weights;
  const std::string idx = f.dir + "/idx";
  ::oc::test::Run built = run(openclip() + " index build" + m + " --images " + f.dir + "/img --out " + idx);
  ASSERT_EQ(built.status, 0) << built.out;
  const std::vector<std::string> cmds = {
      " embed" + m + " --texts " + f.dir + "/t.txt --out " + f.dir + "/e.npy",
      " classify" + m + " --image " + f.dir + "/img/a.png --labels a",
      " eval" + m + " --val-data " + f.dir + "/val.csv",
      " index build" + m + " --images " + f.dir + "/img --out " + f.dir + "/idx2",
      " index search " + idx + " --text hi",
      " serve" + m + " --port 0",
      " bench infer --model test-tiny --batch-size 2 --steps 1",
      " bench zeroshot --model test-tiny --batch-size 2 --images 2 --classes 2 --templates 1",
  };
  auto info = nlohmann::json::parse(run(openclip() + " info --json").out);
  bool have_gpu = false;
  for (auto& b : info["backends"]) have_gpu |= b["name"] == "cuda" && b["available"].get<bool>();
  for (const std::string& cmd : cmds) {
    ::oc::test::Run r = run("timeout 120 " + openclip() + cmd + " --device tpu");
    EXPECT_EQ(r.status, 1) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("unknown device 'tpu'; available: ref, cpu"), std::string::npos) << cmd << "\n" << r.out;
    if (have_gpu) continue;  // --device cuda would run: nothing to refuse
    r = run("timeout 120 " + openclip() + cmd + " --device cuda");
    EXPECT_EQ(r.status, 1) << cmd << "\n" << r.out;
    EXPECT_TRUE(r.out.find("built without CUDA") != std::string::npos ||
                r.out.find("no visible GPU") != std::string::npos)
        << cmd << "\n"
        << r.out;
  }
}

// train's start-up log names the backend --device picked (it said "Device cpu" whatever it was).
TEST(CliDevice, TrainLogNamesTheDevice) {
  const std::string dir = fresh_dir("cli_device_log");
  ::oc::test::Run r = run("cd '" + dir + "' && " + openclip() +
                          " train --dataset-type synthetic --train-num-samples 8 --batch-size 4 --epochs 1 --model "
                          "test-tiny --precision fp32 --workers 1 --device ref --name ref");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string log = fs::read_text(dir + "/logs/ref/out.log").value();
  EXPECT_NE(log.find("Running with a single process. Device ref,"), std::string::npos) << log;
}

}  // namespace
}  // namespace oc::test
