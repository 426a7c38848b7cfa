// `openclip train --device cuda` end to end (ctest label `cuda`: test train_cuda;
// scripts/gpu-check.sh): 50 ViT-B-32 amp_bf16 steps on the learnable synthetic task lower the
// loss; a run killed by SIGKILL resumes bitwise on the GPU, and its checkpoint continues
// training on the CPU. Skipped with the reason where no GPU is visible.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "core/fs.h"
#include "cuda_available.h"
#include "io/run_logs.h"
#include "same_weights.h"
#include "test_util.h"

namespace oc {
namespace {

using test::run;

class CudaTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::cuda_missing(); !why.empty()) GTEST_SKIP() << "cuda not available: " << why;
  }
};

std::vector<float> loss_curve(const std::string& run_dir) {
  auto s = read_run_scalars(run_dir);
  std::vector<float> v;
  for (auto& [step, val] : s["train/loss"].by_step) v.push_back(val);
  return v;
}

std::string train_cmd(const std::string& dir, const std::string& model, const std::string& flags) {
  return "cd '" + dir + "' && " + test::openclip() + " train --dataset-type synthetic-learnable --model " + model +
         " --device cuda --seed 3 --workers 4 --report-to tensorboard --log-every-n-steps 1 " + flags;
}

TEST_F(CudaTrain, VitB32FiftyStepsLowerTheLoss) {
  const std::string dir = test::fresh_dir("cuda_vitb32");
  const auto r = run(train_cmd(dir, "ViT-B-32",
                               "--precision amp_bf16 --batch-size 64 --train-num-samples 3200 --epochs 1 --lr 5e-4 "
                               "--warmup 10 --wd 0.1 --name vitb32"));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::vector<float> loss = loss_curve(dir + "/logs/vitb32");
  ASSERT_EQ(loss.size(), 50u);
  // ln(64) = 4.16 is chance; the learnable task's 10 classes put the floor near ln(6.4).
  // The mean of the last 10 steps must be clearly below the first 10 (noise is ~0.05).
  const double first = std::accumulate(loss.begin(), loss.begin() + 10, 0.0) / 10;
  const double last = std::accumulate(loss.end() - 10, loss.end(), 0.0) / 10;
  EXPECT_LT(last, first - 0.3) << "first 10 steps " << first << ", last 10 " << last;
}

TEST_F(CudaTrain, ResumeIsBitwiseAndTheCheckpointTrainsOnCpu) {
  const std::string dir = test::fresh_dir("cuda_resume");
  const std::string flags =
      "--precision amp_bf16 --batch-size 32 --train-num-samples 256 --epochs 3 --lr 2e-3 --warmup 4 "
      "--checkpoint-every-n-steps 5 --save-most-recent --name ";
  const auto full = run(train_cmd(dir, "test-tiny", flags + "full"));
  ASSERT_EQ(full.status, 0) << full.out;
  const auto killed = run("export OPENCLIP_DEBUG_SIGKILL_AT_STEP=13; " + train_cmd(dir, "test-tiny", flags + "crash"));
  ASSERT_EQ(killed.status, 128 + 9) << killed.out;
  const auto resumed = run(train_cmd(dir, "test-tiny", flags + "crash --resume latest"));
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  test::expect_same_weights(dir + "/logs/full/checkpoints/epoch_3.pt", dir + "/logs/crash/checkpoints/epoch_3.pt",
                            "GPU run resumed after SIGKILL");
  // The GPU checkpoint is an ordinary one: the CPU resumes from it for a fourth epoch.
  const auto cpu = run("cd '" + dir + "' && " + test::openclip() +
                       " train --dataset-type synthetic-learnable --model test-tiny --device cpu --seed 3 --workers 2 "
                       "--precision amp_bf16 --batch-size 32 --train-num-samples 256 --epochs 4 --lr 2e-3 --warmup 4 "
                       "--name on_cpu --resume '" + dir + "/logs/full/checkpoints/epoch_3.pt'");
  ASSERT_EQ(cpu.status, 0) << cpu.out;
  EXPECT_TRUE(fs::exists(dir + "/logs/on_cpu/checkpoints/epoch_4.pt"));
}

}  // namespace
}  // namespace oc
