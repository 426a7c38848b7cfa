// The whole model on two backends: one contrastive training step plus an AdamW update of the
// test-tiny model on `cpu` against the same on `ref` (plain loops, double sums), fp32 and
// amp_bf16. Every op of the model, the loss, the optimizer and logit_scale's clamp run on the
// model's backend, so this also shows that nothing in model/ or optim/ bypasses it. The
// step on one backend is also bitwise repeatable.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "one_step.h"
#include "ops/registry.h"

namespace oc {
namespace {

TEST(BackendStep, CpuMatchesRefFp32) {
  const StepOut c = one_step(ops::backend("cpu"), Precision::Fp32), r = one_step(ops::backend("ref"), Precision::Fp32);
  // fp32 through a few layers of float GEMMs (K <= 4 * width): a few float ulps per op,
  // compounded over ~2 x 20 ops; ref sums in double. 1e-4 is ~100x that, and any op that
  // computed something else would be off by 1e-2 or more.
  EXPECT_NEAR(c.loss, r.loss, 1e-5 * std::abs(r.loss));
  EXPECT_LT(rel_err(c.grads, r.grads), 1e-4);
  // One AdamW step of lr 1e-3 moves each parameter by ~1e-3 whatever the gradient's size
  // (m / sqrt(v) ~ 1), so parameters agree as long as the gradients' signs do.
  EXPECT_LT(rel_err(c.params, r.params), 1e-5);
  EXPECT_NEAR(c.logit_scale, r.logit_scale, 1e-6);
}

TEST(BackendStep, CpuMatchesRefAmpBf16) {
  const StepOut c = one_step(ops::backend("cpu"), Precision::AmpBf16),
                r = one_step(ops::backend("ref"), Precision::AmpBf16);
  // The same bf16 rounding points on both backends. Where the fp32 value before a rounding
  // point differs in its last bits between the two (different summation order), it can round
  // to the neighbouring bf16 value (2^-8 relative) and carry that into later layers; measured
  // here: 1.5e-7 of the largest gradient. Rounding at the wrong points moves the gradients by
  // as much as bf16 does at all: amp_bf16 vs fp32 on ref is 7.5e-3 (also checked below, so
  // the bound stays discriminating). 1e-3 sits between the two.
  EXPECT_NEAR(c.loss, r.loss, 1e-4 * std::abs(r.loss));
  const double e = rel_err(c.grads, r.grads);
  const double e32 = rel_err(r.grads, one_step(ops::backend("ref"), Precision::Fp32).grads);
  EXPECT_LT(e, 1e-3) << "amp_bf16 gradients, cpu vs ref";
  EXPECT_GT(e32, 3e-3) << "amp_bf16 vs fp32 on ref: the bound above must be well below this";
}

TEST(BackendStep, BitwiseRepeatableOnEachBackend) {
  for (const char* name : {"cpu", "ref"}) {
    const StepOut a = one_step(ops::backend(name), Precision::AmpBf16),
                  b = one_step(ops::backend(name), Precision::AmpBf16);
    EXPECT_EQ(a.loss, b.loss) << name;
    EXPECT_EQ(a.grads, b.grads) << name;
    EXPECT_EQ(a.params, b.params) << name;
  }
}

}  // namespace
}  // namespace oc

namespace oc {
namespace {

// An arena the backend cannot provide: the error says how many bytes, for what config and batch.
TEST(BackendStep, AllocationFailureNamesBytesConfigAndBatch) {
  Clip m(load_model_config("test-tiny"), ops::backend("cpu"));
  try {
    m.plan_training(int64_t(1) << 32);
    FAIL() << "planning activations for a batch of 2^32 succeeded";
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("backend cpu: cannot allocate "), std::string::npos) << msg;
    EXPECT_NE(msg.find(" bytes ("), std::string::npos) << msg;
    EXPECT_NE(msg.find("test-tiny vision tower, batch 4294967296"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace oc
