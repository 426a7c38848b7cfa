// The EVA02 ops against timm 0.9.16's own functions (tests/reference/eva_ref.py ops, in
// .pyref): apply_rot_embed_cat on q and k past the class token, with RotaryEmbeddingCat's table
// (ref_feat_shape 16 over a 3x3 grid), and the SwiGLU gate silu(x_gate) * x; forward and the
// autograd gradients, float64 on both sides, so only rounding may differ (1e-12 relative).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/fs.h"
#include "ops/cpu/eva.h"
#include "ops_test_util.h"
#include "test_util.h"

namespace oc::ops::test {
namespace {

constexpr int64_t kB = 2, kGrid = 3, kW = 16, kH = 2, kT = 1 + kGrid * kGrid;  // eva_ref.py's shapes
constexpr int64_t kGate = 301;

std::vector<double> load(const std::string& dir, const std::string& name, size_t n) {
  const std::string bytes = fs::read_text(dir + "/" + name + ".f64").value();
  EXPECT_EQ(bytes.size(), n * sizeof(double)) << name;
  std::vector<double> v(n);
  std::memcpy(v.data(), bytes.data(), std::min(bytes.size(), n * sizeof(double)));
  return v;
}

void expect_close(const std::string& what, const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_LT(max_scaled_err(a, b, 1e-12, 1e-12), 1.0) << what;
}

class EvaTorchRef : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!oc::test::have_open_clip()) return;
    dir_ = oc::test::fresh_dir("eva_ops_ref");
    const auto r = oc::test::run(oc::test::pyref_python() + " " OPENCLIP_TEST_DIR "/reference/eva_ref.py ops " + dir_);
    ASSERT_EQ(r.status, 0) << r.out;
  }
  static std::string dir_;
};
std::string EvaTorchRef::dir_;

TEST_F(EvaTorchRef, RopeForwardAndGradient) {
  OC_NEED_OPEN_CLIP();
  const size_t n = kB * kT * 3 * kW, D = kW / kH;
  const auto tab = load(dir_, "rope_table", (kT - 1) * 2 * D), R = load(dir_, "rope_r", n);
  auto y = load(dir_, "rope_in", n);
  rope_rotate<double>(y.data(), tab.data(), kB, kT, kW, kH, 1, false);
  expect_close("rope forward", y, load(dir_, "rope_out", n));
  auto d = R;
  rope_rotate<double>(d.data(), tab.data(), kB, kT, kW, kH, 1, true);
  expect_close("rope gradient", d, load(dir_, "rope_grad", n));
}

TEST_F(EvaTorchRef, SwigluForwardAndGradient) {
  OC_NEED_OPEN_CLIP();
  const auto g = load(dir_, "gate", kGate), x = load(dir_, "x", kGate), R = load(dir_, "gate_r", kGate);
  std::vector<double> y(kGate), dg(kGate), dx(kGate);
  swiglu_forward<double>(y.data(), g.data(), x.data(), kGate);
  expect_close("swiglu forward", y, load(dir_, "gate_out", kGate));
  swiglu_backward<double>(dg.data(), dx.data(), R.data(), g.data(), x.data(), kGate);
  expect_close("swiglu d gate", dg, load(dir_, "gate_dg", kGate));
  expect_close("swiglu d x", dx, load(dir_, "gate_dx", kGate));
}

}  // namespace
}  // namespace oc::ops::test
