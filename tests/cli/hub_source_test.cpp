// --pretrained / --model hf-hub:ORG/NAME end to end, against OpenCLIP itself: a repository made
// by OpenCLIP (tests/hub/tiny_repo.py) served by a fake hub on 127.0.0.1 (tests/hub/fake_hub.h),
// loaded by OpenCLIP's create_model_and_transforms('hf-hub:test/tiny') through HF_ENDPOINT and
// by `openclip embed`; each cache (Python's, ours) then used by the other with the server gone.
#include <dirent.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "core/fs.h"
#include "hub/fake_hub.h"
#include "test_util.h"

namespace oc {
namespace {

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// The smallest cosine between matching rows of two .npy files (numpy, in the reference venv).
double min_cosine(const std::string& a, const std::string& b) {
  test::Run r = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/hub/tiny_repo.py cos " + a + " " + b);
  EXPECT_EQ(r.status, 0) << r.out;
  const size_t p = r.out.find("min_cosine ");
  return p == std::string::npos ? -1 : std::stod(r.out.substr(p + 11));
}

struct HubSource : ::testing::Test {
  std::string dir;
  test::FakeHub server;
  void SetUp() override {
    OC_NEED_OPEN_CLIP();
    dir = test::fresh_dir("hub_source");
    test::Run r = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/hub/tiny_repo.py make " + dir);
    ASSERT_EQ(r.status, 0) << r.out;
    for (const char* f : {"open_clip_config.json", "open_clip_model.safetensors", "open_clip_pytorch_model.bin"})
      server.files[std::string("test/tiny/") + f] = read_all(dir + "/repo/" + f);
  }
  std::string env(const std::string& cache, bool offline = false) const {
    return "HF_ENDPOINT=" + server.endpoint() + " HF_HUB_CACHE=" + cache + (offline ? " HF_HUB_OFFLINE=1 " : " ");
  }
  test::Run embed(const std::string& cache, const std::string& source_flags, const std::string& out) const {
    return test::run(env(cache) + test::openclip() + " embed " + source_flags + " --images " + dir + "/images --out " +
                     out);
  }
};

TEST_F(HubSource, DownloadsAndEmbedsAsOpenClipAndEachCacheServesTheOther) {
  const std::string ref = dir + "/ref.npy", ours = dir + "/ours.npy";
  test::Run py = test::run(env(dir + "/cache_py") + test::pyref_python() +
                           " " OPENCLIP_TEST_DIR "/hub/tiny_repo.py embed " + dir + " " + ref);
  ASSERT_EQ(py.status, 0) << py.out;
  test::Run r = embed(dir + "/cache_ours", "--pretrained hf-hub:test/tiny", ours);
  ASSERT_EQ(r.status, 0) << r.out;
  // fp32 on both sides, 2 layers: the rows agree to rounding (1e-4 leaves room for kernel order).
  EXPECT_GE(min_cosine(ref, ours), 0.9999);
  r = embed(dir + "/cache_ours", "--model hf-hub:test/tiny@main", dir + "/ours_model.npy");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_GE(min_cosine(ref, dir + "/ours_model.npy"), 0.9999);
  server.stop();
  // Python's cache (2.24 took the .bin) with the server gone: the cached files, no request.
  r = embed(dir + "/cache_py", "--model hf-hub:test/tiny", dir + "/from_py_cache.npy");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_GE(min_cosine(ref, dir + "/from_py_cache.npy"), 0.9999);
  r = test::run(env(dir + "/cache_py", true) + test::openclip() + " embed --model hf-hub:test/tiny --images " + dir +
                "/images --out " + dir + "/offline.npy");
  ASSERT_EQ(r.status, 0) << r.out;
  // Ours, read by huggingface_hub offline (hf_hub_download finds our blobs through our symlinks).
  py = test::run(env(dir + "/cache_ours", true) + test::pyref_python() +
                 " " OPENCLIP_TEST_DIR "/hub/tiny_repo.py embed-safetensors " + dir + " " + dir + "/py_from_ours.npy");
  ASSERT_EQ(py.status, 0) << py.out;
  EXPECT_GE(min_cosine(ref, dir + "/py_from_ours.npy"), 0.9999);
}

}  // namespace
}  // namespace oc
