// Two processes with `--device cuda` equal one process on the global batch to 1e-5 in the
// loss (ctest label `cuda`: test dist_cuda; scripts/gpu-check.sh). With two GPUs the ranks
// use NCCL; with one, both ranks share it and use MPI through host memory
// (OPENCLIP_COMM=mpi: NCCL refuses two ranks on one GPU). Skipped without mpirun or a GPU.
// Also, everywhere: how dist::make_communicator reads OPENCLIP_COMM.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "cuda_available.h"
#include "dist_util.h"
#ifdef OPENCLIP_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#endif

namespace oc::test::dist {
namespace {

TEST(CudaDist, TwoProcessesEqualOneOnTheGlobalBatch) {
  if (const std::string why = test::cuda_missing(); !why.empty()) GTEST_SKIP() << "cuda not available: " << why;
  if (!have_mpi()) GTEST_SKIP() << "no MPI build or mpirun";
#ifdef OPENCLIP_HAVE_CUDA
  const bool two_gpus = ops::cuda_device_count() >= 2;
#else
  const bool two_gpus = false;
#endif
  const std::string comm = two_gpus ? "nccl" : "mpi";
  const std::string dir = test::fresh_dir("cuda_dist_" + comm);
  test::Run r1 = run(train_cmd(dir, "single", 16, "--device cuda"));
  ASSERT_EQ(r1.status, 0) << r1.out;
  test::Run r2 = run(mpirun(2) + "-x OPENCLIP_COMM=" + comm + " env OPENCLIP_DEBUG_RANK_LOSS=1 bash -c \"" +
                     train_cmd(dir, "dist", 8, "--device cuda --global-batch-gradient") + "\"");
  ASSERT_EQ(r2.status, 0) << r2.out;
  EXPECT_NE(r2.out.find(", " + comm + ", "), std::string::npos) << "the log names the communicator: " << r2.out;
  const std::vector<double> a = losses(dir + "/logs/single");
  ASSERT_EQ(a.size(), 4u);
  std::vector<std::vector<double>> own(2, std::vector<double>(a.size(), NAN));
  std::istringstream lines(r2.out);
  for (std::string line; std::getline(lines, line);) {
    int rank;
    long long step;
    double l;
    if (std::sscanf(line.c_str(), "debug: rank %d step %lld loss %lf", &rank, &step, &l) == 3 && rank < 2 &&
        step >= 0 && size_t(step) < a.size())
      own[size_t(rank)][size_t(step)] = l;
  }
  // As dist_test.cpp: the mean of the ranks' losses is the global batch's loss, equal up to
  // the order of float sums (the bound: 1e-5 relative).
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR((own[0][i] + own[1][i]) / 2, a[i], 1e-5 * std::abs(a[i])) << "step " << i << " (" << comm << ")";
}

std::string comm_error(const char* choice, void* device_stream) {
  setenv("OPENCLIP_COMM", choice, 1);
  std::string m;
  try {
    ::oc::dist::make_communicator(::oc::dist::World{.rank = 0, .size = 2, .local_rank = 0}, 5.0, device_stream);
  } catch (const std::exception& e) {
    m = e.what();
  }
  unsetenv("OPENCLIP_COMM");
  return m;
}

TEST(CommChoice, OpenclipCommIsCheckedBeforeAnythingStarts) {
  EXPECT_NE(comm_error("tcp", nullptr).find("OPENCLIP_COMM=tcp: choose mpi or nccl"), std::string::npos);
  // NCCL takes device memory: a host backend (no device stream) cannot have it.
  EXPECT_NE(comm_error("nccl", nullptr).find("NCCL needs --device cuda"), std::string::npos);
  setenv("OPENCLIP_COMM", "tcp", 1);  // one rank: no communicator to choose
  EXPECT_STREQ(::oc::dist::make_communicator(::oc::dist::World{}, 5.0, nullptr)->backend(), "single");
  unsetenv("OPENCLIP_COMM");
}

}  // namespace
}  // namespace oc::test::dist
