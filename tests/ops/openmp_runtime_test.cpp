// One OpenMP runtime per process: our kernels are built with -fopenmp and oneDNN is threaded
// with OpenMP too. Were oneDNN built against Intel's libiomp5 (or LLVM's libomp) while we use
// GNU's libgomp, the process would run two thread pools that each think they own every core.
// After oneDNN has run its threaded kernels, /proc/self/maps names the runtimes loaded.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/gemm.h"

namespace oc::ops {
namespace {

// The OpenMP runtimes mapped into this process: "libgomp", "libiomp5", "libomp".
std::set<std::string> loaded_openmp_runtimes() {
  std::ifstream maps("/proc/self/maps");
  std::set<std::string> found;
  for (std::string line; std::getline(maps, line);) {
    const std::string file = line.substr(line.rfind('/') == std::string::npos ? line.size() : line.rfind('/') + 1);
    for (const char* rt : {"libgomp.so", "libiomp5.so", "libomp.so"})
      if (file.rfind(rt, 0) == 0) found.insert(std::string(rt, std::string(rt).size() - 3));
  }
  return found;
}

TEST(OpenMpRuntime, OneRuntimeAfterOneDnnRan) {
  // Large enough that oneDNN spreads the work over its threads.
  const int64_t n = 256;
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  gemm<float>(false, true, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
  ASSERT_FLOAT_EQ(c[0], 0.5f * 0.25f * n);
  std::vector<bf16> a16(n * n, to_bf16(0.5f)), b16(n * n, to_bf16(0.25f));
  gemm_bf16(false, true, n, n, n, a16.data(), n, b16.data(), n, c.data(), n);
  ASSERT_FLOAT_EQ(c[0], 0.5f * 0.25f * n);

  const std::set<std::string> rts = loaded_openmp_runtimes();
  std::string names;
  for (const auto& r : rts) names += r + " ";
  EXPECT_FALSE(rts.count("libgomp") && rts.count("libiomp5")) << "two OpenMP runtimes: " << names;
#if defined(__clang__)
  // clang's -fopenmp links LLVM's libomp for our code (scripts/check.sh); oneDNN brings libgomp.
  EXPECT_TRUE(rts.count("libgomp")) << "loaded: " << names;
#else
  EXPECT_EQ(rts, std::set<std::string>{"libgomp"}) << "loaded: " << names;
#endif
}

}  // namespace
}  // namespace oc::ops
