// The whole training step on the cuda backend against cpu (test-tiny, one contrastive step
// and an AdamW update: one_step.h): fp32 to 1e-5 relative in the loss, amp_bf16 within the
// bound cpu keeps against ref, bitwise repeatable. Skipped with the reason where no GPU is
// visible (ctest label `cuda`: test model_cuda; scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cuda_available.h"
#include "one_step.h"
#include "ops/registry.h"

namespace oc {
namespace {

class CudaStep : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = test::cuda_missing(); !why.empty()) GTEST_SKIP() << "cuda not available: " << why;
  }
};

TEST_F(CudaStep, Fp32MatchesCpu) {
  const StepOut g = one_step(ops::backend("cuda"), Precision::Fp32), c = one_step(ops::backend("cpu"), Precision::Fp32);
  // The bound for the loss: 1e-5 relative (both sum in float in different orders:
  // a few ulps). Gradients and parameters: the bounds cpu keeps against ref
  // (backend_step_test.cpp), for the same reasons.
  EXPECT_NEAR(g.loss, c.loss, 1e-5 * std::abs(c.loss));
  EXPECT_LT(rel_err(g.grads, c.grads), 1e-4);
  // Parameters after one AdamW step (one_step: lr 1e-3, AdamWCfg's eps 1e-6): at step 1 the bias
  // corrections cancel and p moves by lr * g / (|g| + eps), whose derivative in g is at most
  // 1 / eps, so a gradient difference dg moves it by at most lr * |dg| / eps (a sign change of g
  // near 0 included: the function is continuous); the weight decay is the same on both sides; plus
  // a few ulps of p for the float operations, and a factor 1.01 for the float steps of the update. The first GPU run
  // (H200, 2026-12-04) measured 1.3e-5 relative against the old blanket 1e-5 (gradients of size ~eps).
  constexpr double kLr = 1e-3, kEps = 1e-6;
  size_t worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const double bound =
        1.01 * kLr * std::abs(double(g.grads[i]) - c.grads[i]) / kEps + 4 * 1.2e-7 * std::abs(c.params[i]);
    const double excess = std::abs(double(g.params[i]) - c.params[i]) - bound;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  EXPECT_LE(worst_excess, 0.0) << "parameter " << worst << ": cuda " << g.params[worst] << ", cpu " << c.params[worst]
                               << ", gradients " << g.grads[worst] << " / " << c.grads[worst];
  EXPECT_LT(rel_err(g.params, c.params), 1e-4);  // and no parameter moved by more than ~a tenth of a step
  EXPECT_NEAR(g.logit_scale, c.logit_scale, 1e-6);
}

TEST_F(CudaStep, AmpBf16WithinTheCpuBound) {
  const StepOut g = one_step(ops::backend("cuda"), Precision::AmpBf16),
                c = one_step(ops::backend("cpu"), Precision::AmpBf16);
  // backend_step_test.cpp's amp_bf16 bound (cpu vs ref): 1e-4 in the loss, 1e-3 in the
  // gradients, between a last-bit flip at a rounding point (~1e-7) and a missing rounding
  // point (amp_bf16 vs fp32: ~7.5e-3).
  EXPECT_NEAR(g.loss, c.loss, 1e-4 * std::abs(c.loss));
  EXPECT_LT(rel_err(g.grads, c.grads), 1e-3);
}

TEST_F(CudaStep, BitwiseRepeatable) {
  for (Precision p : {Precision::Fp32, Precision::AmpBf16}) {
    const StepOut a = one_step(ops::backend("cuda"), p), b = one_step(ops::backend("cuda"), p);
    EXPECT_EQ(a.loss, b.loss);
    EXPECT_EQ(a.grads, b.grads);
    EXPECT_EQ(a.params, b.params);
  }
}

}  // namespace
}  // namespace oc
