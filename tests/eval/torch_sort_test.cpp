// Retrieval ranks with ties, against torch's own argsort and OpenCLIP 2.24's get_clip_metrics.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "core/fs.h"
#include "core/rng.h"
#include "eval/metrics.h"
#include "eval/torch_sort.h"
#include "test_util.h"

namespace oc {
namespace {

// One row per line, 9 significant digits: float32 values read back exactly.
std::string rows_text(const std::vector<std::vector<float>>& rows) {
  std::string s;
  char buf[32];
  for (const auto& r : rows) {
    for (float x : r) std::snprintf(buf, sizeof buf, "%.9g ", double(x)), s += buf;
    s += "\n";
  }
  return s;
}

// Rows with many exact ties: values k/7 for k in [0, levels), some with NaNs.
std::vector<std::vector<float>> tie_rows() {
  Rng rng(11);
  std::vector<std::vector<float>> rows;
  for (int n : {1, 2, 5, 16, 17, 31, 100, 257, 1000, 5000})
    for (int levels : {1, 2, 3, n / 4 + 1, n + 1}) {
      std::vector<float> r(static_cast<size_t>(n));
      for (float& x : r) x = float(int(rng.uniform() * float(levels))) / 7.0f;
      if (levels == 3 && n > 4) r[1] = r[size_t(n) / 2] = std::numeric_limits<float>::quiet_NaN();
      rows.push_back(r);
    }
  return rows;
}

TEST(TorchSort, PermutationIsTorchArgsortDescending) {
  if (!test::have_torch()) GTEST_SKIP() << "needs /usr/bin/python3 with torch";
  const auto rows = tie_rows();
  const std::string dir = test::fresh_dir("torch_sort_perm");
  fs::write_atomic(dir + "/rows.txt", rows_text(rows));
  auto ref = test::run("/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/openclip_ref.py argsort " + dir + "/rows.txt");
  ASSERT_EQ(ref.status, 0) << ref.out;
  std::istringstream lines(ref.out);
  std::vector<std::pair<float, int64_t>> ours;
  int unstable = 0;
  for (const auto& r : rows) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    std::istringstream ids(line);
    torch_argsort_desc(r, &ours);
    for (size_t p = 0; p < r.size(); ++p) {
      int64_t id = -1;
      ids >> id;
      ASSERT_EQ(ours[p].second, id) << "row of " << r.size() << " at position " << p;
      if (p > 0 && ours[p].first == ours[p - 1].first && ours[p].second < ours[p - 1].second) ++unstable;
    }
  }
  // The rows longer than 16 do not keep equal values in index order: that is what is tested.
  EXPECT_GT(unstable, 0);
}

TEST(TorchSort, PositionWithoutTiesCountsLarger) {
  std::vector<float> row = {0.5f, 2.0f, -1.0f, 3.0f, 0.25f};
  std::vector<std::pair<float, int64_t>> scratch;
  EXPECT_EQ(torch_argsort_desc_position(row, 0, &scratch), 2);
  EXPECT_EQ(torch_argsort_desc_position(row, 3, &scratch), 0);
  EXPECT_EQ(torch_argsort_desc_position(row, 2, &scratch), 4);
  // Up to 16 values the sort is an insertion sort: equal values keep index order.
  std::vector<float> equal(16, 1.0f);
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(torch_argsort_desc_position(equal, i, &scratch), i);
}

// Features whose every product and sum is exact in float32 (multiples of 1/4, |dot| <= 64, the
// scale a power of two), so torch's BLAS and our GEMM give the same logits bit for bit and
// the only ties are the ones built in: each image repeated once per caption (as a
// multi-caption CSV gives OpenCLIP), and coarse values that collide.
struct Case {
  int64_t images, captions, block;
  std::vector<std::vector<float>> img, txt;
};

Case make_case(int64_t images, int64_t captions, int64_t block) {
  Case c{images, captions, block, {}, {}};
  Rng rng(uint64_t(images * 100 + captions));
  auto coarse = [&] { return float(int(rng.uniform() * 9.0) - 4) / 4.0f; };
  for (int64_t i = 0; i < images; ++i) {
    std::vector<float> im(8);
    for (float& x : im) x = coarse();
    for (int64_t k = 0; k < captions; ++k) {
      c.img.push_back(im);
      // A caption near its image (one coordinate moved by 1/4), so that the ground truth is
      // near the top and the order among the image's tied copies decides R@1.
      std::vector<float> t = im;
      t[size_t(rng.below(8))] += rng.uniform() < 0.5 ? 0.25f : -0.25f;
      c.txt.push_back(t);
    }
  }
  return c;
}

std::vector<float> flat(const std::vector<std::vector<float>>& rows) {
  std::vector<float> v;
  for (const auto& r : rows) v.insert(v.end(), r.begin(), r.end());
  return v;
}

TEST(Retrieval, EqualsOpenClipGetClipMetricsWithTies) {
  OC_NEED_OPEN_CLIP();
  // 60 images x 5 captions (rows of 300: torch's sort is not stable there), 4 x 3 (rows of 12:
  // insertion sort, stable), 400 x 1 (ties from coarse values only: 9 levels in 8 dimensions);
  // blocks smaller than a row count exercise the blocked GEMMs.
  const std::vector<Case> cases = {make_case(60, 5, 64), make_case(4, 3, 1024), make_case(400, 1, 128)};
  const std::string dir = test::fresh_dir("get_clip_metrics");
  std::string args;
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string a = dir + "/img" + std::to_string(k) + ".txt", b = dir + "/txt" + std::to_string(k) + ".txt";
    fs::write_atomic(a, rows_text(cases[k].img));
    fs::write_atomic(b, rows_text(cases[k].txt));
    args += " " + a + " " + b;
  }
  auto ref = test::run(test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/openclip_ref.py metrics 4" + args);
  ASSERT_EQ(ref.status, 0) << ref.out;
  std::istringstream lines(ref.out.substr(ref.out.find('{')));
  for (const Case& c : cases) {
    const int64_t N = c.images * c.captions;
    std::vector<int64_t> diagonal(static_cast<size_t>(N));
    for (int64_t i = 0; i < N; ++i) diagonal[size_t(i)] = i;
    auto ours = retrieval_metrics(flat(c.img), flat(c.txt), N, N, 8, diagonal, 4.0f, c.block);
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << ref.out;
    auto theirs = nlohmann::json::parse(line);
    ASSERT_EQ(theirs.size(), ours.size());
    // Ranks are integers; the means and recalls are fractions computed in double here and by
    // numpy there: 1e-6 is far below one rank in N (>= 1/400).
    for (auto& [k, v] : theirs.items()) {
      ASSERT_TRUE(ours.contains(k)) << k;
      EXPECT_NEAR(ours[k], v.get<double>(), 1e-6) << k << " (" << c.images << " images x " << c.captions << ")";
    }
    std::printf("[ %lld x %lld ] text_to_image_R@1 %.4f image_to_text_R@1 %.4f (OpenCLIP %.4f %.4f)\n",
                (long long)c.images, (long long)c.captions, ours["text_to_image_R@1"], ours["image_to_text_R@1"],
                theirs["text_to_image_R@1"].get<double>(), theirs["image_to_text_R@1"].get<double>());
  }
}

}  // namespace
}  // namespace oc
