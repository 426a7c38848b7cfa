// Hostile input through the CLI (issue 13): one writer per run folder, damaged checkpoint
// fields, step-checkpoint pruning, expanded .pt tensors in every .pt loader, device files
// as image paths, and the 24-byte parquet that used to hang `data download`.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "core/fs.h"
#include "io/torch_pt.h"
#include "model/weights.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "core/folder_lock.h"

extern char** environ;

namespace oc {
namespace {

using test::run;

std::string train_cmd(const std::string& name, int epochs, const std::string& extra = "") {
  return test::openclip() + " train --dataset-type synthetic-learnable --train-num-samples 256 --batch-size 32 --epochs " +
         std::to_string(epochs) + " --model test-tiny --warmup 4 --lr 2e-3 --workers 1 --precision fp32 --seed 3 --name " +
         name + " " + extra;
}

pid_t spawn_shell(const std::string& cmd) {
  pid_t pid = -1;
  const char* argv[] = {"/bin/sh", "-c", cmd.c_str(), nullptr};
  if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) return -1;
  return pid;
}

int wait_status(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Two `--resume latest` runs on one name: the second is refused with the holder's PID and
// host, and the first completes intact (it used to lose its in-flight checkpoint).
TEST(HostileTrain, SecondWriterOfARunFolderIsRefused) {
  const std::string dir = test::fresh_dir("hostile_lock");
  const pid_t first = spawn_shell("cd '" + dir + "' && exec " + train_cmd("same", 2, "--resume latest") + " > first.txt 2>&1");
  ASSERT_GT(first, 0);
  const std::string lock = dir + "/logs/same/.lock";
  bool locked = false;
  for (int i = 0; i < 600 && !locked; ++i) {  // up to 60 s on a loaded machine
    auto t = fs::read_text(lock);
    locked = t && t->find("pid " + std::to_string(first)) != std::string::npos;
    if (!locked) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(locked) << "the first run never locked " << lock;
  ASSERT_EQ(::kill(first, SIGSTOP), 0);  // hold it mid-run, whatever the machine's speed
  auto second = run("cd '" + dir + "' && " + train_cmd("same", 2, "--resume latest"));
  ::kill(first, SIGCONT);
  EXPECT_EQ(second.status, 1) << second.out;
  EXPECT_NE(second.out.find("in use by another training run"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("pid " + std::to_string(first) + " on host "), std::string::npos) << second.out;
  const int first_status = wait_status(first);
  auto first_out = fs::read_text(dir + "/first.txt");
  ASSERT_EQ(first_status, 0) << (first_out ? *first_out : "");
  Checkpoint ck = load_checkpoint(dir + "/logs/same/checkpoints/epoch_2.pt");
  EXPECT_EQ(ck.state.completed_epochs, 2);
  const std::string log = fs::read_text(dir + "/logs/same/out.log").value();
  size_t starts = 0;
  for (size_t p = 0; (p = log.find("Running with a single process", p)) != std::string::npos; ++p) ++starts;
  EXPECT_EQ(starts, 1u) << "the refused run wrote into out.log";
  // The lock is released with the process: a later resume proceeds.
  auto third = run("cd '" + dir + "' && " + train_cmd("same", 2, "--resume latest"));
  EXPECT_EQ(third.status, 0) << third.out;
}

TEST(HostileTrain, StaleTempFilesAreRemovedOnlyWhenTheirWriterIsGone) {
  const std::string dir = test::fresh_dir("hostile_tmp");
  pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(wait_status(dead), 0);
  fs::write_atomic(dir + "/epoch_1.pt.tmp-" + std::to_string(dead), std::string("partial"));
  fs::write_atomic(dir + "/epoch_2.pt.tmp-" + std::to_string(::getpid()), std::string("in flight"));
  fs::write_atomic(dir + "/notes.tmp-draft", std::string("not ours"));
  EXPECT_EQ(remove_stale_tmp(dir), 1);
  EXPECT_FALSE(fs::exists(dir + "/epoch_1.pt.tmp-" + std::to_string(dead)));
  EXPECT_TRUE(fs::exists(dir + "/epoch_2.pt.tmp-" + std::to_string(::getpid())));
  EXPECT_TRUE(fs::exists(dir + "/notes.tmp-draft"));
}

TEST(HostileTrain, DamagedCheckpointFieldsAreRefusedNamingTheFile) {
  const std::string dir = test::fresh_dir("hostile_ckpt");
  auto r = run("cd '" + dir + "' && " + train_cmd("base", 1, "--checkpoint-every-n-steps 4"));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string good = dir + "/logs/base/checkpoints/epoch_1.pt";
  auto edit = [&](const std::string& out, auto&& change) {
    auto pt = io::load_pt(good);
    ASSERT_TRUE(pt.ok()) << pt.error();
    change(*pt);
    io::save_pt(out, *pt);
  };
  const std::string neg = dir + "/negative.pt";
  edit(neg, [](io::PyValue& v) { v.set("epoch", io::PyValue::integer(-5)); });
  auto a = run("cd '" + dir + "' && " + train_cmd("neg", 2, "--resume " + neg));
  EXPECT_EQ(a.status, 1) << a.out;
  EXPECT_NE(a.out.find(neg), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("'epoch' is -5"), std::string::npos) << a.out;
  // A mid-epoch checkpoint whose loader_state is not JSON.
  const std::string step = dir + "/logs/base/checkpoints/epoch_0_step_4.pt";
  ASSERT_TRUE(fs::exists(step));
  const std::string bad_state = dir + "/bad_state.pt";
  {
    auto pt = io::load_pt(step);
    ASSERT_TRUE(pt.ok()) << pt.error();
    for (auto& [k, v] : pt->dict)
      if (k.s == "openclip_cpp") v.set("loader_state", io::PyValue::str("{\"epoch\": 1e999"));
    io::save_pt(bad_state, *pt);
  }
  auto b = run("cd '" + dir + "' && " + train_cmd("badstate", 1, "--resume " + bad_state));
  EXPECT_EQ(b.status, 1) << b.out;
  EXPECT_NE(b.out.find(bad_state + ": openclip_cpp.loader_state is not a JSON object"), std::string::npos) << b.out;
  EXPECT_EQ(b.out.find("[json.exception"), std::string::npos) << b.out;
}

TEST(HostileTrain, OlderStepCheckpointsArePruned) {
  const std::string dir = test::fresh_dir("hostile_keep");
  // 8 steps per epoch, a step checkpoint every 2 (not at the epoch's end): steps 2, 4, 6.
  auto r = run("cd '" + dir + "' && " + train_cmd("keep", 1, "--checkpoint-every-n-steps 2"));
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string c = dir + "/logs/keep/checkpoints/";
  EXPECT_FALSE(fs::exists(c + "epoch_0_step_2.pt"));
  EXPECT_TRUE(fs::exists(c + "epoch_0_step_4.pt"));
  EXPECT_TRUE(fs::exists(c + "epoch_0_step_6.pt"));
  EXPECT_TRUE(fs::exists(c + "epoch_1.pt"));
  auto all = run("cd '" + dir + "' && " + train_cmd("all", 1, "--checkpoint-every-n-steps 2 --keep-step-checkpoints 0"));
  ASSERT_EQ(all.status, 0) << all.out;
  EXPECT_TRUE(fs::exists(dir + "/logs/all/checkpoints/epoch_0_step_2.pt"));
}

// The 841-byte file: every .pt loader gives an error (rc 1), none aborts (rc 134).
TEST(HostileTrain, ExpandedTensorCheckpointIsAnErrorInEveryLoader) {
  if (!test::have_torch()) GTEST_SKIP() << "no /usr/bin/python3 with torch";
  const std::string dir = test::fresh_dir("hostile_expand");
  const std::string pt = dir + "/expanded.pt";
  ASSERT_EQ(run("/usr/bin/python3 -c \"import torch; torch.save(torch.zeros(1).expand(2**20, 2**20), '" + pt + "')\"")
                .status,
            0);
  const std::string oc = test::openclip();
  fs::write_atomic(dir + "/texts.txt", std::string("a photo\n"));
  for (const std::string& cmd :
       {oc + " convert " + pt + " " + dir + "/out.safetensors",
        oc + " classify --model test-tiny --pretrained " + pt + " --image /nope.png --labels a b",
        oc + " embed --model test-tiny --pretrained " + pt + " --texts " + dir + "/texts.txt --out " + dir + "/e.npy",
        "cd '" + dir + "' && " + train_cmd("exp", 1, "--pretrained " + pt)}) {
    auto r = run(cmd);
    EXPECT_EQ(r.status, 1) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find(pt), std::string::npos) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("cap on tensor data"), std::string::npos) << cmd << "\n" << r.out;
  }
}

TEST(HostileTrain, DeviceFilesAsImagePaths) {
  const std::string dir = test::fresh_dir("hostile_dev");
  Clip m(load_model_config("test-tiny"));
  m.init(1);
  save_weights(m, dir + "/w.safetensors");
  auto c = run("timeout 60 " + test::openclip() + " classify --model test-tiny --pretrained " + dir +
               "/w.safetensors --image /dev/zero --labels a b");
  EXPECT_EQ(c.status, 1) << c.out;
  EXPECT_NE(c.out.find("/dev/zero is not a regular file"), std::string::npos) << c.out;
  fs::write_atomic(dir + "/rows.csv", std::string("filepath\ttitle\n/dev/zero\tendless\n"));
  auto s = run("cd '" + dir + "' && timeout 60 " + test::openclip() + " data shards --from-csv rows.csv --out shards");
  EXPECT_NE(s.status, 124) << "data shards read /dev/zero without end\n" << s.out;
  // The row is counted as failed in the shard's stats, with the reason.
  EXPECT_EQ(run("grep -rq 'is not a regular file' '" + dir + "/shards'").status, 0) << s.out;
}

TEST(HostileTrain, TheHangingParquetIsAnErrorAtOnce) {
  const std::string dir = test::fresh_dir("hostile_parquet");
  // "PAR1", a 12-byte footer whose field 1 is a map of 2**62 (bool, bool) entries, its
  // length, "PAR1": 24 bytes.
  const unsigned char footer[] = {0x1b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0x11, 0x00};
  std::string f = "PAR1";
  f.append(reinterpret_cast<const char*>(footer), sizeof footer);
  f += std::string("\x0c\x00\x00\x00", 4) + "PAR1";
  ASSERT_EQ(f.size(), 24u);
  fs::write_atomic(dir + "/urls.parquet", f);
  auto r = run("cd '" + dir + "' && timeout 60 " + test::openclip() +
               " data download --url-list urls.parquet --input-format parquet --output-folder out");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("map header claims"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace oc
