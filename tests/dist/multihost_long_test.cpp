// Multi-host data parallel, for real (issue 22): three "hosts" are network namespaces on this
// machine, each with one veth interface on a private bridge (10.231.7.0/24, an address range
// that exists only inside the namespaces this test makes; the bridge lives in a fourth
// namespace, so the machine's own network is never touched). `mpirun` starts in host 0 with a
// hostfile of the three addresses; Open MPI's rsh launcher enters the other hosts through an
// agent script (`ip netns exec <host>`) instead of ssh, and the ranks talk over TCP only
// (`--mca btl tcp,self`: no shared memory across hosts). Checked:
//   - 3 hosts x batch 8 train exactly as 3 ranks on one host (shared memory), losses and weights;
//   - a rank killed mid-run ends every rank within 60 s with a message naming it (no hang);
//   - `--resume latest` on two hosts continues from the last checkpoint the three wrote.
// Skipped, with the reason, when not root, without `ip netns`, or without mpirun.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <sstream>
#include <thread>

#include "core/fs.h"
#include "dist_util.h"
#include "test_util.h"

namespace oc {
namespace {

using test::run;
using namespace test::dist;

constexpr int kHosts = 3;
const std::string kNsPrefix = "ocmh";  // namespaces: ocmh<pid>h0..h2 and ocmh<pid>sw (the switch)

// Removes namespaces (and the processes in them) made by this test's earlier runs whose
// process is gone (a crashed or killed test binary cannot run its destructor).
void remove_stale_namespaces() {
  std::istringstream in(run("ip netns list").out);
  for (std::string line; std::getline(in, line);) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(kNsPrefix, 0) != 0) continue;
    const pid_t owner = pid_t(std::atol(ns.c_str() + kNsPrefix.size()));
    if (owner > 0 && owner != getpid() && ::kill(owner, 0) != 0)
      run("ip netns pids " + ns + " | xargs -r kill -9; ip netns del " + ns);
  }
}

// The three hosts and their switch; the destructor removes them, whatever the test's outcome.
class Hosts {
 public:
  explicit Hosts(const std::string& dir) : dir_(dir), prefix_(kNsPrefix + std::to_string(getpid())) {
    remove_stale_namespaces();
    std::string sh = "set -e\nip netns add " + ns_sw() + "\nip -n " + ns_sw() + " link add br0 type bridge\n" +
                     "ip -n " + ns_sw() + " link set br0 up\n";
    for (int h = 0; h < kHosts; ++h) {
      const std::string p = prefix_ + "p" + std::to_string(h);  // the switch's end of host h's cable
      // Created inside the host's namespace, the pair never appears in the machine's own.
      sh += "ip netns add " + ns(h) + "\nip -n " + ns(h) + " link add eth0 type veth peer name " + p + "\n" +
            "ip -n " + ns(h) + " link set " + p + " netns " + ns_sw() + "\n" +
            "ip -n " + ns_sw() + " link set " + p + " master br0 up\n" +
            "ip -n " + ns(h) + " addr add " + ip(h) + "/24 dev eth0\n" +
            "ip -n " + ns(h) + " link set eth0 up\nip -n " + ns(h) + " link set lo up\n";
    }
    test::Run r = run("bash -c '" + sh + "'");
    if (r.status != 0) error_ = "cannot make network namespaces (ip netns): " + r.out;
    // mpirun's launcher: "AGENT HOST COMMAND..." runs COMMAND in HOST's namespace, as ssh would.
    // Each host gets its own TMPDIR, as real hosts have their own /tmp: Open MPI's session
    // folders are named by hostname, which the namespaces share, and daemons creating the same
    // folder at once fail ("mkdir ... File exists", 1 run in 6 before this).
    for (int h = 0; h < kHosts; ++h) fs::make_dirs(tmp(h));
    std::string agent = "#!/bin/sh\nhost=$1; shift\ncase $host in\n";
    for (int h = 0; h < kHosts; ++h) agent += "  " + ip(h) + ") ns=" + ns(h) + ";;\n";
    agent += "  *) echo \"agent: no host $host\" >&2; exit 1;;\nesac\n";
    agent += "exec ip netns exec $ns env TMPDIR=" + dir_ + "/tmp-$ns sh -c \"$*\"\n";
    fs::write_atomic(dir_ + "/agent.sh", agent);
    run("chmod +x '" + dir_ + "/agent.sh'");
  }
  ~Hosts() {
    for (int h = 0; h < kHosts; ++h) run("ip netns pids " + ns(h) + " | xargs -r kill -9; ip netns del " + ns(h));
    run("ip netns del " + ns_sw());
  }
  const std::string& error() const { return error_; }
  std::string ns(int h) const { return prefix_ + "h" + std::to_string(h); }
  static std::string ip(int h) { return "10.231.7." + std::to_string(h + 1); }
  std::string tmp(int h) const { return dir_ + "/tmp-" + ns(h); }  // the host's own TMPDIR

  // mpirun in host 0 over the first `hosts` hosts, one rank each, TCP on the veths only.
  std::string mpirun(int hosts, const std::string& extra = "") const {
    const std::string hostfile = dir_ + "/hosts" + std::to_string(hosts);
    std::string lines;
    for (int h = 0; h < hosts; ++h) lines += ip(h) + " slots=1\n";
    fs::write_atomic(hostfile, lines);
    return "ip netns exec " + ns(0) + " env TMPDIR=" + tmp(0) + " mpirun --allow-run-as-root --bind-to none -np " +
           std::to_string(hosts) + " --hostfile '" + hostfile + "' --mca plm_rsh_agent '" + dir_ + "/agent.sh' --mca btl tcp,self" +
           " --mca btl_tcp_if_include 10.231.7.0/24 --mca oob_tcp_if_include 10.231.7.0/24 " + extra + " ";
  }
  // The processes still running in any host's namespace.
  std::string leftover() const {
    std::string pids;
    for (int h = 0; h < kHosts; ++h) pids += run("ip netns pids " + ns(h)).out;
    return pids;
  }

 private:
  std::string ns_sw() const { return prefix_ + "sw"; }
  std::string dir_, prefix_, error_;
};

// The reason to skip, or "".
std::string cannot_run() {
  if (geteuid() != 0) return "not root: network namespaces need CAP_SYS_ADMIN";
  if (run("ip netns list").status != 0) return "`ip netns` is not available";
  if (!have_mpi()) return "no MPI build or mpirun";
  return "";
}

// Each rank prints its network namespace before training: three distinct ones, none ours.
std::string with_netns(const std::string& cmd) {
  return "bash -c \"echo rank \\$OMPI_COMM_WORLD_RANK netns \\$(readlink /proc/self/ns/net); " + cmd + "\"";
}

// 96 samples = 4 steps of 3 x 8 per epoch.
const std::string kSteps = "--train-num-samples 96";

TEST(MultiHost, ThreeHostsOverTcpTrainAsOneHost) {
  if (std::string why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = test::fresh_dir("multihost_eq");
  Hosts hosts(dir);
  if (!hosts.error().empty()) GTEST_SKIP() << hosts.error();  // e.g. root without CAP_SYS_ADMIN in a container
  auto t0 = std::chrono::steady_clock::now();
  test::Run one = run(mpirun(3) + "bash -c \"" + train_cmd(dir, "onehost", 8, kSteps) + "\"");
  ASSERT_EQ(one.status, 0) << one.out;
  test::Run three = run("timeout 300 " + hosts.mpirun(3) + with_netns(train_cmd(dir, "threehosts", 8, kSteps)));
  ASSERT_EQ(three.status, 0) << three.out;
  std::printf("[ multihost ] 3 hosts over TCP: %.1f s (both runs)\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_NE(three.out.find("Data parallel: 3 ranks x batch 8 = global batch 24"), std::string::npos) << three.out;
  std::set<std::string> nets;
  std::istringstream lines(three.out);
  for (std::string line; std::getline(lines, line);)
    if (size_t p = line.find(" netns net:"); line.rfind("rank ", 0) == 0 && p != std::string::npos)
      nets.insert(line.substr(p + 7));
  EXPECT_EQ(nets.size(), 3u) << three.out;
  std::string own = run("readlink /proc/self/ns/net").out;
  EXPECT_EQ(nets.count(own.substr(0, own.find('\n'))), 0u) << "a rank ran in the test's own network namespace";
  // The same ranks, data and kernels; only the transport differs, and it moves bytes: the
  // runs must be equal, not merely close.
  const std::vector<double> a = losses(dir + "/logs/onehost"), b = losses(dir + "/logs/threehosts");
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(a, b);
  if (!test::have_torch()) GTEST_SKIP() << "weights not compared: /usr/bin/python3 with torch missing";
  EXPECT_EQ(weight_diff(dir + "/logs/onehost/checkpoints/epoch_1.pt", dir + "/logs/threehosts/checkpoints/epoch_1.pt"),
            0.0);
}

TEST(MultiHost, LostHostEndsEveryRankAndTwoHostsResume) {
  if (std::string why = cannot_run(); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = test::fresh_dir("multihost_kill");
  Hosts hosts(dir);
  if (!hosts.error().empty()) GTEST_SKIP() << hosts.error();  // e.g. root without CAP_SYS_ADMIN in a container
  // Host 2's rank is SIGKILLed after step 2 (of 8); a checkpoint is written after every step.
  const std::string train = train_cmd(dir, "run", 8, kSteps + " --epochs 2 --checkpoint-every-n-steps 1 "
                                                    "--dist-timeout 30");
  auto t0 = std::chrono::steady_clock::now();
  test::Run r = run("timeout 120 " +
                    hosts.mpirun(3, "-x OPENCLIP_DEBUG_SIGKILL_AT_STEP=2 -x OPENCLIP_DEBUG_FAULT_RANK=2") +
                    "bash -c \"" + train + "\"");
  std::string left = hosts.leftover();
  while (!left.empty() && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    left = hosts.leftover();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ multihost ] killed rank: every rank gone after %.1f s\n", secs);
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.status, 124) << "the job hung until the test's timeout:\n" << r.out;
  EXPECT_EQ(left, "") << "processes still running in the hosts' namespaces after 60 s";
  EXPECT_LT(secs, 60.0);
  // The lost host is named: by mpirun ("process rank 2 ... on node 10.231.7.3 exited on signal
  // 9") and by the survivors' TCP transport ("peer process has unexpectedly disconnected ...
  // Peer host: 10.231.7.3"); which comes first is a race, so either will do.
  EXPECT_NE(r.out.find(Hosts::ip(2)), std::string::npos) << r.out;
  if (size_t p = r.out.find("signal 9"); p != std::string::npos) {  // mpirun's message, for the log
    const size_t b = r.out.rfind('\n', p) + 1;
    std::printf("[ multihost ] mpirun: %s\n", r.out.substr(b, r.out.find('\n', p) - b).c_str());
  }
  // The newest checkpoint the three hosts wrote: step 1's is complete before step 2 starts (its
  // save ends at a barrier of all ranks); rank 0 may or may not have renamed step 2's into place
  // before mpirun stopped it (written atomically: whole or absent).
  const std::string ckpts = dir + "/logs/run/checkpoints/";
  ASSERT_TRUE(fs::exists(ckpts + "epoch_0_step_1.pt")) << run("ls -l '" + ckpts + "'").out << r.out;
  EXPECT_FALSE(fs::exists(ckpts + "epoch_0_step_3.pt"));
  const std::string latest = fs::exists(ckpts + "epoch_0_step_2.pt") ? "epoch_0_step_2.pt" : "epoch_0_step_1.pt";

  test::Run r2 = run("timeout 300 " + hosts.mpirun(2) + "bash -c \"" + train + " --resume latest\"");
  EXPECT_EQ(r2.status, 0) << r2.out;
  const size_t resumed = r2.out.find("=> resuming checkpoint");
  ASSERT_NE(resumed, std::string::npos) << r2.out;
  EXPECT_NE(r2.out.substr(resumed, r2.out.find('\n', resumed) - resumed).find(latest), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find("Data parallel: 2 ranks x batch 8 = global batch 16"), std::string::npos) << r2.out;
  EXPECT_TRUE(fs::exists(dir + "/logs/run/checkpoints/epoch_2.pt")) << r2.out;
  std::printf("[ multihost ] kill + resume on 2 hosts: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace
}  // namespace oc
