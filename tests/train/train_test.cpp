// `openclip train` end to end through the CLI: learning, the run folder, exact resume
// after SIGKILL, checkpoints that PyTorch loads, TensorBoard events, `logs compare`, and
// bad input (flags, read-only and full disks).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/fs.h"
#include "model/weights.h"
#include "same_weights.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "io/run_logs.h"

namespace oc {
namespace {

using test::run;

// A tiny CLIP on the learnable synthetic task: 256 samples, batch 32, 8 steps per epoch.
std::string base_cmd(const std::string& dir, const std::string& name, int epochs = 3) {
  return "cd '" + dir + "' && " + test::openclip() +
         " train --dataset-type synthetic-learnable --train-num-samples 256 --batch-size 32 --epochs " +
         std::to_string(epochs) +
         " --model test-tiny --warmup 4 --lr 2e-3 --wd 0.1 --workers 2 --precision fp32 --seed 3"
         " --report-to tensorboard --log-every-n-steps 1 --name " + name;
}

std::vector<float> loss_curve(const std::string& run_dir) {
  auto s = read_run_scalars(run_dir);
  std::vector<float> v;
  for (auto& [step, val] : s["train/loss"].by_step) v.push_back(val);
  return v;
}

TEST(Train, TinyModelLearnsAndWritesTheRunFolder) {
  std::string dir = test::fresh_dir("train_learns");
  auto r = run(base_cmd(dir, "learn", 6));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string root = dir + "/logs/learn";
  for (const char* f : {"out.log", "params.txt", "checkpoints/epoch_1.pt", "checkpoints/epoch_6.pt"})
    EXPECT_TRUE(fs::exists(root + "/" + f)) << f;
  auto loss = loss_curve(root);
  ASSERT_EQ(loss.size(), 48u);
  // ln(32) = 3.47 is chance for a batch of 32. The task has 10 classes, so a batch holds
  // ~3.2 copies of each caption and the loss cannot fall below ~ln(3.2) = 1.16: ask for
  // two thirds of the way from chance toward that floor within 48 steps.
  EXPECT_GT(loss.front(), 3.0f);
  EXPECT_LT(loss.back(), 0.65f * std::log(32.0f)) << "loss did not fall well below ln(batch)";
  std::string log = fs::read_text(root + "/out.log").value();
  EXPECT_NE(log.find("Train Epoch: 0 ["), std::string::npos);
  EXPECT_NE(log.find("Contrastive_loss:"), std::string::npos);
  std::string params = fs::read_text(root + "/params.txt").value();
  EXPECT_NE(params.find("batch_size: 32\n"), std::string::npos);
  EXPECT_NE(params.find("model: test-tiny\n"), std::string::npos);
  // Same name again: OpenCLIP's "Experiment already exists".
  auto again = run(base_cmd(dir, "learn", 1));
  EXPECT_NE(again.status, 0);
  EXPECT_NE(again.out.find("Experiment already exists"), std::string::npos) << again.out;
}

// `extra`: --force-patch-dropout, whose draws continue from the checkpoint's stream position.
void expect_resume_after_sigkill_bitwise(const std::string& extra, const std::string& tag) {
  std::string dir = test::fresh_dir("train_resume_" + tag);
  const std::string flags = " --checkpoint-every-n-steps 5 --save-most-recent" + extra;
  auto full = run(base_cmd(dir, "full") + flags);
  ASSERT_EQ(full.status, 0) << full.out;
  // The second run kills itself with SIGKILL right after optimizer step 13 (epoch 1, mid-
  // epoch), after the step-10 checkpoint; then resumes from the latest checkpoint.
  auto killed = run("export OPENCLIP_DEBUG_SIGKILL_AT_STEP=13; " + base_cmd(dir, "crash") + flags);
  ASSERT_EQ(killed.status, 128 + 9) << killed.out;
  ASSERT_FALSE(fs::exists(dir + "/logs/crash/checkpoints/epoch_3.pt"));
  auto resumed = run(base_cmd(dir, "crash") + flags + " --resume latest");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("global step 10, batch 2 of the epoch"), std::string::npos) << resumed.out;
  test::expect_same_weights(dir + "/logs/full/checkpoints/epoch_3.pt", dir + "/logs/crash/checkpoints/epoch_3.pt",
                            "after resume");
  // TensorBoard: the resumed run's points replace the crashed run's after step 10.
  auto la = loss_curve(dir + "/logs/full"), lb = loss_curve(dir + "/logs/crash");
  EXPECT_EQ(la, lb);
}

TEST(Train, ResumeAfterSigkillIsBitwiseIdentical) { expect_resume_after_sigkill_bitwise("", "plain"); }
TEST(Train, ResumeAfterSigkillIsBitwiseIdenticalWithPatchDropout) {
  expect_resume_after_sigkill_bitwise(" --force-patch-dropout 0.5", "patch_dropout");
}

TEST(Train, CheckpointLoadsInPyTorchAndEventsDecode) {
  if (!test::have_torch()) GTEST_SKIP() << "needs /usr/bin/python3 with torch";
  std::string dir = test::fresh_dir("train_pt");
  auto r = run(base_cmd(dir, "pt", 1));
  ASSERT_EQ(r.status, 0) << r.out;
  auto c = run("/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/check_run.py checkpoint " + dir +
               "/logs/pt/checkpoints/epoch_1.pt --config test-tiny");
  EXPECT_EQ(c.status, 0) << c.out;
  auto e = run("/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/check_run.py events " + dir + "/logs/pt/tensorboard");
  ASSERT_EQ(e.status, 0) << e.out;
  auto j = nlohmann::json::parse(e.out);
  for (const char* tag : {"train/loss", "train/contrastive_loss", "train/lr", "train/scale", "train/samples_per_second",
                          "train/samples_per_second_per_gpu", "train/data_time", "train/batch_time"})
    EXPECT_EQ(j[tag].size(), 8u) << tag;
  // The independent decoder and ours agree.
  auto ours = loss_curve(dir + "/logs/pt");
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i], j["train/loss"][i][1].get<float>());
}

TEST(Train, LogsCompareAndExport) {
  std::string dir = test::fresh_dir("train_compare");
  ASSERT_EQ(run(base_cmd(dir, "a", 1)).status, 0);
  ASSERT_EQ(run(base_cmd(dir, "b", 1)).status, 0);
  ASSERT_EQ(run(base_cmd(dir, "c", 1) + " --lr 5e-3").status, 0);
  const std::string oc = test::openclip();
  auto same = run(oc + " logs compare " + dir + "/logs/a " + dir + "/logs/b --tag train/loss --max-rel-diff 0.02");
  EXPECT_EQ(same.status, 0) << same.out;
  EXPECT_NE(same.out.find("PASS"), std::string::npos);
  auto differ = run(oc + " logs compare " + dir + "/logs/c " + dir + "/logs/a --tag train/loss --max-rel-diff 0.02");
  EXPECT_EQ(differ.status, 1) << differ.out;
  EXPECT_NE(differ.out.find("FAIL"), std::string::npos);
  auto csv = run(oc + " logs export " + dir + "/logs/a --tag train/loss --format csv");
  EXPECT_EQ(csv.status, 0);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 9);  // header + 8 steps
  auto bad_tag = run(oc + " logs export " + dir + "/logs/a --tag train/nope");
  EXPECT_NE(bad_tag.status, 0);
  EXPECT_NE(bad_tag.out.find("train/loss"), std::string::npos) << "lists the tags it has";
}

TEST(Train, BadFlagsGiveClearErrors) {
  std::string dir = test::fresh_dir("train_flags");
  const std::string oc = "cd " + dir + " && " + test::openclip() + " train ";
  auto r = run(oc + "--dataset-type synthetic --batch-szie 4");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("did you mean --batch-size"), std::string::npos) << r.out;
  r = run(oc + "--dataset-type synthetic --precision fp8");
  EXPECT_NE(r.out.find("--precision fp8"), std::string::npos) << r.out;
  r = run(oc + "--dataset-type synthetic --model NoSuchModel");
  EXPECT_NE(r.out.find("unknown model"), std::string::npos) << r.out;
  r = run(oc + "--dataset-type synthetic --horovod");
  EXPECT_NE(r.out.find("not available yet"), std::string::npos) << r.out;
  r = run(oc + "--dataset-type synthetic --model ViT-B-32-SigLIP2-256 --force-quick-gelu");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("--force-quick-gelu with ViT-B-32-SigLIP2-256: its text_cfg.act_kwargs"), std::string::npos)
      << r.out;
  r = run(oc + "--train-data /nonexistent/{00000..00003}.tar --train-num-samples 10 --model test-tiny");
  EXPECT_NE(r.status, 0);
  EXPECT_EQ(r.out.find("Segmentation"), std::string::npos);
}

// --force-patch-dropout overrides the config (OpenCLIP: vision_cfg["patch_dropout"]): the
// training forward sees half the patches, so the loss curve changes; 1 and above are refused.
TEST(Train, ForcePatchDropoutChangesTheTrainingForward) {
  std::string dir = test::fresh_dir("train_pdrop");
  ASSERT_EQ(run(base_cmd(dir, "plain", 1)).status, 0);
  auto r = run(base_cmd(dir, "drop", 1) + " --force-patch-dropout 0.5");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(fs::read_text(dir + "/logs/drop/params.txt").value().find("force_patch_dropout: 0.5\n"), std::string::npos);
  const auto plain = loss_curve(dir + "/logs/plain"), drop = loss_curve(dir + "/logs/drop");
  ASSERT_EQ(plain.size(), drop.size());
  EXPECT_NE(plain.front(), drop.front());  // the first forward already drops patches
  r = run(base_cmd(dir, "bad", 1) + " --force-patch-dropout 1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("--force-patch-dropout 1 must be in [0, 1)"), std::string::npos) << r.out;
  // A timm tower (SigLIP): OpenCLIP hands the rate to timm's PatchDropout, not implemented
  // here: refused before the model is built, not silently ignored.
  r = run("cd '" + dir + "' && " + test::openclip() +
          " train --model ViT-B-16-SigLIP --siglip --dataset-type synthetic-learnable --train-num-samples 8"
          " --batch-size 4 --epochs 1 --force-patch-dropout 0.5 --name siglip_pdrop");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("has a timm image tower (vit_base_patch16_siglip_224), whose patch dropout (timm's "
                       "PatchDropout) openclip-cpp does not implement"),
            std::string::npos)
      << r.out;
}

TEST(Train, ReadOnlyAndFullDisksGiveClearErrors) {
  std::string dir = test::fresh_dir("train_disks");
  if (std::system(("mount -t tmpfs -o size=1m tmpfs " + dir + " 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  // Full disk: 1 MiB cannot hold a checkpoint (~7 MiB): the save fails with ENOSPC.
  auto full = run(base_cmd(dir, "full", 1));
  EXPECT_NE(full.status, 0);
  EXPECT_NE(full.out.find("No space left"), std::string::npos) << full.out;
  EXPECT_FALSE(fs::exists(dir + "/logs/full/checkpoints/epoch_1.pt"));
  std::system(("umount " + dir).c_str());
  std::string ro = test::fresh_dir("train_ro");
  if (std::system(("mount -t tmpfs -o ro tmpfs " + ro).c_str()) != 0) GTEST_SKIP();
  auto r = run(base_cmd(ro, "ro", 1));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("Read-only"), std::string::npos) << r.out;
  std::system(("umount " + ro).c_str());
}

}  // namespace
}  // namespace oc

namespace oc {
namespace {

TEST(TrainFaults, SigtermFinishesTheStepSavesAndResumes) {
  std::string dir = test::fresh_dir("train_sigterm");
  // SIGTERM (a real signal, raised after optimizer step 11) must finish that step, write a
  // resumable checkpoint and exit 0; resuming then completes the run like an uninterrupted one.
  auto full = run(base_cmd(dir, "full", 2));
  ASSERT_EQ(full.status, 0) << full.out;
  auto term = run("export OPENCLIP_DEBUG_SIGTERM_AT_STEP=11; " + base_cmd(dir, "term", 2));
  ASSERT_EQ(term.status, 0) << term.out;
  EXPECT_NE(term.out.find("resumable checkpoint"), std::string::npos) << term.out;
  EXPECT_TRUE(fs::exists(dir + "/logs/term/checkpoints/epoch_1_step_11.pt"));
  EXPECT_FALSE(fs::exists(dir + "/logs/term/checkpoints/epoch_2.pt"));
  auto resumed = run(base_cmd(dir, "term", 2) + " --resume latest");
  ASSERT_EQ(resumed.status, 0) << resumed.out;
  test::expect_same_weights(dir + "/logs/full/checkpoints/epoch_2.pt", dir + "/logs/term/checkpoints/epoch_2.pt",
                            "after SIGTERM and resume");
}

TEST(TrainFaults, NonFiniteStepsAreSkippedThenTheRunStops) {
  std::string dir = test::fresh_dir("train_nan");
  // logit_scale becomes NaN before step 10 (epoch 1): every later loss is non-finite, the
  // updates are skipped and logged, and after --max-bad-steps 3 the run stops with an error;
  // the epoch-1 checkpoint stays intact and finite.
  auto r = run("export OPENCLIP_DEBUG_NAN_AT_STEP=10; " + base_cmd(dir, "nan", 3) + " --max-bad-steps 3");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("update skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("non-finite steps in a row"), std::string::npos) << r.out;
  NamedTensors ck = read_state_dict(dir + "/logs/nan/checkpoints/epoch_1.pt");
  for (auto& [name, t] : ck)
    for (float v : t.to_f32()) ASSERT_TRUE(std::isfinite(v)) << name;
  EXPECT_FALSE(fs::exists(dir + "/logs/nan/checkpoints/epoch_2.pt"));
}

}  // namespace
}  // namespace oc

namespace oc {
namespace {

// --precision bf16 keeps exactly OpenCLIP's convert_weights_to_lp set at bf16 values (from
// the independent reference's module walk), pure_bf16 every parameter; both after steps.
TEST(TrainFeatures, Bf16KeepsOpenClipsParameterSetInBf16) {
  if (!test::have_torch()) GTEST_SKIP() << "needs /usr/bin/python3 with torch";
  auto lp = run("/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/clip_ref.py --config test-tiny --lp-params");
  ASSERT_EQ(lp.status, 0) << lp.out;
  std::set<std::string> lp_set;
  std::istringstream in(lp.out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lp_set.insert(line);
  ASSERT_GT(lp_set.size(), 10u);
  EXPECT_TRUE(lp_set.count("visual.proj") && lp_set.count("text_projection"));
  std::string dir = test::fresh_dir("train_bf16");
  for (const std::string prec : {"bf16", "pure_bf16"}) {
    auto r = run("cd '" + dir + "' && " + test::openclip() +
                 " train --dataset-type synthetic-learnable --train-num-samples 64 --batch-size 32 --epochs 1"
                 " --model test-tiny --warmup 1 --lr 1e-3 --workers 1 --seed 3 --precision " + prec + " --name " + prec);
    ASSERT_EQ(r.status, 0) << r.out;
    NamedTensors sd = read_state_dict(dir + "/logs/" + prec + "/checkpoints/epoch_1.pt");
    size_t fp32_kept = 0;
    for (auto& [name, t] : sd) {
      const auto v = t.to_f32();
      bool all_bf16 = true;
      for (float x : v) {
        uint32_t u;
        std::memcpy(&u, &x, 4);
        all_bf16 &= (u & 0xffffu) == 0;
      }
      const bool want = prec == "pure_bf16" || lp_set.count(name);
      // A tensor outside the set can hold bf16 values by chance only if it is tiny or
      // constant (LayerNorm biases start at 0 but move with the first step): require each
      // lp tensor to be bf16 and count the non-lp ones that are not.
      if (want) {
        EXPECT_TRUE(all_bf16) << prec << ": " << name << " is not at bf16 values";
      } else {
        fp32_kept += !all_bf16;
      }
    }
    if (prec == "bf16") {
      EXPECT_GE(fp32_kept, sd.size() - lp_set.size() - 2) << "LayerNorm/embeddings/logit_scale stay fp32";
    }
  }
}

// --siglip: OpenCLIP's SigLIP init (logit_scale ln 10, logit_bias -10), the sigmoid loss,
// logit_bias in the state_dict right after logit_scale, and the flags OpenCLIP's SigLIP
// path does not use refused.
TEST(TrainFeatures, SigLipTrainsAndSavesLogitBias) {
  std::string dir = test::fresh_dir("train_siglip");
  const std::string cmd = "cd '" + dir + "' && " + test::openclip() +
                          " train --dataset-type synthetic-learnable --train-num-samples 128 --batch-size 32"
                          " --epochs 2 --model test-tiny --warmup 2 --lr 2e-3 --workers 1 --precision fp32 --seed 3"
                          " --report-to tensorboard --log-every-n-steps 1 --siglip";
  auto r = run(cmd + " --name sig");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Logit Scale: 10.000"), std::string::npos) << r.out;
  auto loss = loss_curve(dir + "/logs/sig");
  ASSERT_EQ(loss.size(), 8u);
  // At init every logit is 10 * cosine - 10: the 31 negatives per row cost ~log(1 + e^-10)
  // each and the positive 10 - 10 * cosine, so the loss starts at 10 minus ten times the
  // mean positive cosine, which an untrained tiny model keeps within +-0.25 (11.1 measured).
  EXPECT_NEAR(loss.front(), 10.0f, 2.5f);
  EXPECT_LT(loss.back(), 0.8f * loss.front());
  NamedTensors sd = read_state_dict(dir + "/logs/sig/checkpoints/epoch_2.pt");
  ASSERT_GE(sd.size(), 4u);
  EXPECT_EQ(sd[2].first, "logit_scale");
  EXPECT_EQ(sd[3].first, "logit_bias");
  const float bias = sd[3].second.to_f32()[0];
  EXPECT_NE(bias, -10.0f) << "logit_bias is trained";
  // 8 AdamW steps of lr <= 2e-3 move a scalar by at most ~8 * 2e-3 (AdamW's update is ~lr):
  // 1.0 only rules out a wrong init or a runaway update.
  EXPECT_NEAR(bias, -10.0f, 1.0f);
  for (const char* bad : {" --local-loss", " --gather-with-grad"}) {
    auto b = run(cmd + " --name bad" + bad);
    EXPECT_NE(b.status, 0) << bad;
    EXPECT_NE(b.out.find("--siglip"), std::string::npos) << b.out;
  }
}

// OpenCLIP's --accum-freq K with batch B optimizes the same loss as batch K*B: the same
// samples (one worker, identity crops), the same loss values, and weights equal up to the
// order in which the two micro-batches' gradients are summed.
void expect_accum_matches_larger_batch(const std::string& extra, const std::string& tag) {
  std::string dir = test::fresh_dir("train_accum_" + tag);
  const std::string common = "cd '" + dir + "' && " + test::openclip() +
                             " train --dataset-type synthetic-learnable --train-num-samples 128 --epochs 1"
                             " --model test-tiny --warmup 2 --lr 1e-3 --workers 1 --precision fp32 --seed 5"
                             " --aug-cfg 'scale=(1.0,1.0)' 'ratio=(1.0,1.0)' --report-to tensorboard"
                             " --log-every-n-steps 1 --grad-clip-norm 1.0 " + extra;
  ASSERT_EQ(run(common + " --batch-size 32 --name big").status, 0);
  auto r = run(common + " --batch-size 16 --accum-freq 2 --name accum");
  ASSERT_EQ(r.status, 0) << r.out;
  auto la = loss_curve(dir + "/logs/accum"), lb = loss_curve(dir + "/logs/big");
  ASSERT_EQ(la.size(), lb.size());
  // Step 0: same samples, same model: the same loss to float rounding. Later steps: AdamW's
  // early updates are sign-like for near-zero gradients, so the summation-order difference
  // of the two micro-batch backward passes grows (measured 6.5e-5 in loss and 9e-4 in
  // weights after 4 steps); bounds are ~3x those.
  EXPECT_NEAR(la[0], lb[0], 1e-6 * lb[0]);
  for (size_t i = 0; i < la.size(); ++i) EXPECT_NEAR(la[i], lb[i], 2e-4 * lb[i]) << "step " << i;
  NamedTensors a = read_state_dict(dir + "/logs/accum/checkpoints/epoch_1.pt");
  NamedTensors b = read_state_dict(dir + "/logs/big/checkpoints/epoch_1.pt");
  for (size_t i = 0; i < a.size(); ++i) {
    auto x = a[i].second.to_f32(), y = b[i].second.to_f32();
    double d = 0, m = 1e-2;
    for (size_t k = 0; k < x.size(); ++k) d = std::max(d, double(std::fabs(x[k] - y[k]))), m = std::max(m, double(std::fabs(y[k])));
    if (a[i].first.find("in_proj_bias") != std::string::npos) continue;  // key bias: zero true gradient
    EXPECT_LE(d / m, 3e-3) << a[i].first;
  }
}

// (SigLIP with accumulation does not follow the larger batch this closely (measured 1.3e-3
// relative at step 3), in OpenCLIP 2.24 either: openclip_parity_long_test.cpp checks it
// against OpenCLIP's own training loop, to 1e-5.)
TEST(TrainFeatures, AccumFreqMatchesTheLargerBatch) { expect_accum_matches_larger_batch("", "clip"); }

TEST(TrainFeatures, AccumFreqLogLinesAsOpenClipWhenBatchesAreNotAMultiple) {
  // 8 batches of 16, --accum-freq 3: OpenCLIP takes num_batches // 3 = 2 steps (the last 2
  // batches are dropped), logs i_accum % log_every == 0 and batch_count == 2, with
  // num_samples = batch_count * B * K * world and percent = batch_count / 2.
  std::string dir = test::fresh_dir("train_accum_log");
  auto r = run("cd '" + dir + "' && " + test::openclip() +
               " train --dataset-type synthetic --train-num-samples 128 --epochs 1 --model test-tiny --workers 1"
               " --precision fp32 --batch-size 16 --accum-freq 3 --log-every-n-steps 5 --name log");
  ASSERT_EQ(r.status, 0) << r.out;
  auto log = fs::read_text(dir + "/logs/log/out.log");
  ASSERT_TRUE(log.ok());
  EXPECT_NE(log->find("Train Epoch: 0 [ 48/128 (50%)]"), std::string::npos) << *log;
  EXPECT_NE(log->find("Train Epoch: 0 [ 96/128 (100%)]"), std::string::npos) << *log;
}

}  // namespace
}  // namespace oc
