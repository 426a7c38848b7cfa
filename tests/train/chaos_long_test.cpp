// Chaos test (ctest label `long`): a training run killed with SIGKILL at 5 random moments
// (start-up, mid-step, while a checkpoint is written ...) and resumed with --resume latest
// each time must end with weights bitwise equal to an uninterrupted run's. Unlike
// Train.ResumeAfterSigkillIsBitwiseIdentical (a kill at a chosen step from inside), the
// signal comes from outside at wall-clock moments. The moments are drawn from a seed printed
// in the output; OPENCLIP_CHAOS_SEED=<n> replays one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include "core/fs.h"
#include "model/weights.h"
#include "same_weights.h"
#include "test_util.h"

namespace oc {
namespace {

// A tiny CLIP on the learnable synthetic task: 256 samples, batch 32, 3 epochs of 8 steps,
// a step checkpoint every 3 steps (so kills land before, between and during saves).
std::string train_cmd(const std::string& dir, const std::string& name) {
  return "cd '" + dir + "' && exec " + test::openclip() +
         " train --dataset-type synthetic-learnable --train-num-samples 256 --batch-size 32 --epochs 3"
         " --model test-tiny --warmup 4 --lr 2e-3 --wd 0.1 --workers 2 --precision fp32 --seed 3"
         " --checkpoint-every-n-steps 3 --save-most-recent --resume latest --name " + name +
         " >> '" + dir + "/" + name + ".out' 2>&1";
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Starts `cmd` through the shell (which execs openclip, so the pid is the trainer's).
pid_t spawn(const std::string& cmd) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Waits for `pid`; true when it was killed by SIGKILL, false when it exited by itself (then
// *rc holds its exit status).
bool reap(pid_t pid, int* rc) {
  int st = 0;
  waitpid(pid, &st, 0);
  *rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
}

TEST(TrainChaos, FiveRandomSigkillsThenResumeIsBitwiseIdentical) {
  std::string dir = test::fresh_dir("train_chaos");
  // The uninterrupted run (with --resume latest too: it finds nothing and starts fresh).
  auto t0 = std::chrono::steady_clock::now();
  auto full = test::run(train_cmd(dir, "full"));
  const double full_s = seconds_since(t0);
  ASSERT_EQ(full.status, 0) << fs::read_text(dir + "/full.out").value();

  const char* env = std::getenv("OPENCLIP_CHAOS_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : std::random_device{}();
  std::mt19937_64 rng(seed);
  // Each kill comes 5% to 20% of a whole run's time after its (re)start: anywhere from
  // start-up to several steps in, and together short of a whole run, so that all five land
  // before the run can finish (each restart repeats start-up and the steps after the last
  // checkpoint).
  std::uniform_real_distribution<double> moment(0.05 * full_s, 0.20 * full_s);
  std::string moments;
  int landed = 0;
  for (int k = 0; k < 5; k++) {
    const double at = moment(rng);
    pid_t pid = spawn(train_cmd(dir, "chaos"));
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::duration<double>(at));
    kill(pid, SIGKILL);
    int rc = 0;
    const bool killed = reap(pid, &rc);
    if (!killed) {
      ASSERT_EQ(rc, 0) << "run " << k << " failed by itself:\n" << fs::read_text(dir + "/chaos.out").value();
    }
    landed += killed;
    moments += fmt::format(" {:.2f}s{}", at, killed ? "" : " (finished first)");
  }
  std::cout << "chaos seed " << seed << " (OPENCLIP_CHAOS_SEED), full run " << full_s << " s, kills at" << moments
            << "\n";
  // A run that finished before its kill leaves fewer than five interruptions; that needs
  // the resumed runs to be a third faster than the uninterrupted one (a load change).
  EXPECT_EQ(landed, 5) << "kills at" << moments;

  auto last = test::run(train_cmd(dir, "chaos"));
  const std::string log = fs::read_text(dir + "/chaos.out").value();
  ASSERT_EQ(last.status, 0) << log;
  // How many of the six starts resumed from a checkpoint (rather than from scratch).
  int resumed = 0;
  for (size_t p = 0; (p = log.find("=> resuming checkpoint", p)) != std::string::npos; p++) resumed++;
  std::cout << resumed << " of 6 starts resumed from a checkpoint\n";
  EXPECT_GE(resumed, 1) << "every kill came before the first checkpoint: no resume was tested\n" << log;
  test::expect_same_weights(dir + "/logs/full/checkpoints/epoch_3.pt", dir + "/logs/chaos/checkpoints/epoch_3.pt",
                            "after" + moments + "\n" + log);
}

}  // namespace
}  // namespace oc
