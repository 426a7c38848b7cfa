// Evaluation runs on the model's backend (--device): the zero-shot logits, the retrieval
// logits and clip_val_loss are ops of that backend (eval/zeroshot.h ZeroShotLogits,
// eval/metrics.h retrieval_metrics, ops/staging.h), not host kernels. Checked three ways on
// the eval fixture (test-tiny, 9 images in 3 class folders, 12 captions):
//  - a backend with cpu's kernels that counts the ops evaluation itself issues (the model's
//    inference never runs ClipLoss, nor a GEMM scaled by 100): they run there, and the
//    metrics are bitwise the cpu backend's;
//  - the guarded backend (tests/guarded_backend.h: memory the host cannot touch, every op's
//    pointers checked to be its own), which takes the staging path a device backend takes:
//    bitwise the cpu backend's metrics;
//  - `ref` (plain loops, sums in double) against `cpu`, within the tolerances said below; and
//    `cuda` the same way where a GPU is visible (ctest -L cuda).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "cuda_available.h"
#include "eval/evaluate.h"
#include "eval_fixture.h"
#include "guarded_backend.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/model_tokenizer.h"
#include "model/weights.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/linear_packed.h"
#include "ops/host_backend.h"
#include "ops/registry.h"
#include "test_util.h"

namespace oc {
namespace {

struct CpuKernels {
  template <class A>
  static ops::op_result_t<A> run(const A& a) {
    return ops::cpu::run(a);
  }
};

// The `cpu` backend as ops/cpu/cpu_backend.cpp builds it (its kernels, its prepared weights:
// bitwise its results), counting the GEMMs and losses.
class CountingBackend final : public ops::KernelBackend<CpuKernels> {
 public:
  std::string_view name() const override { return "counting"; }
  void prepare_weight_bf16(const bf16* W, int64_t N, int64_t K) override { ops::prepare_weight_bf16(W, N, K); }
  void release_weight_bf16(const bf16* W) override { ops::release_weight_bf16(W); }
  void prepare_weight_f32(const float* W, int64_t N, int64_t K) override { ops::prepare_weight_f32(W, N, K); }
  void release_weight_f32(const float* W) override { ops::release_weight_f32(W); }
  using KernelBackend::run;
  void run(const ops::GemmArgs& a) override {
    gemm_shapes.push_back({a.M, a.N, a.K, int64_t(a.alpha)});
    KernelBackend::run(a);
  }
  double run(const ops::ClipLossArgs& a) override {
    ++losses;
    return KernelBackend::run(a);
  }
  std::vector<std::array<int64_t, 4>> gemm_shapes;  // M, N, K, alpha
  int losses = 0;
};

// Zero-shot over the class folders (templates.txt) and retrieval + clip_val_loss over val.csv
// (every image once: --val-dedup-images), batches of 4, on a test-tiny built on `be`.
std::map<std::string, double> evaluate_on(ops::Backend& be, const test::EvalFixture& f) {
  Clip m(load_model_config("test-tiny"), be);
  load_weights(m, f.weights);
  m.plan_inference(4);
  EvalData ev;
  ev.imagenet_val = f.dir + "/folder";
  ev.templates_file = f.dir + "/templates.txt";
  ev.val_data = f.dir + "/val.csv";
  ev.dedup_images = true;
  ev.batch_size = 4;
  ev.workers = 1;
  ev.base.context_length = m.cfg().text.context_length;
  ev.base.preprocess.size = m.cfg().vision.image_size;
  return evaluate(m, model_tokenizer(m.cfg()), ev);
}

const test::EvalFixture& fixture() {
  static const test::EvalFixture f = test::make_eval_fixture("eval_backend");
  return f;
}

TEST(EvalOnBackend, ScoresAndLossRunOnTheModelsBackend) {
  CountingBackend be;
  const auto counted = evaluate_on(be, fixture());
  const auto cpu = evaluate_on(ops::backend("cpu"), fixture());
  EXPECT_EQ(counted, cpu);  // the same kernels on host memory: bitwise
  ASSERT_GT(cpu.count("clip_val_loss"), 0u);
  const int64_t E = load_model_config("test-tiny").embed_dim;
  int zeroshot = 0, retrieval = 0;
  for (auto [M, N, K, alpha] : be.gemm_shapes) {
    zeroshot += alpha == 100 && N == 3 && K == E;            // logits of a batch x 3 classes
    retrieval += alpha == 1 && M == 9 && N == 12 && K == E;  // 9 images x 12 captions, both ways
  }
  EXPECT_EQ(zeroshot, 3) << "9 images in batches of 4";
  EXPECT_EQ(retrieval, 2) << "image_to_text and text_to_image, one block each";
  EXPECT_EQ(be.losses, 3) << "clip_val_loss: 12 captions in batches of 4";
}

TEST(EvalOnBackend, GuardedBackendStagesAndMatchesCpuBitwise) {
  const auto g = evaluate_on(test::guarded(), fixture());
  const auto cpu = evaluate_on(ops::backend("cpu"), fixture());
  EXPECT_EQ(g, cpu);
}

// `other` (another implementation of every op) against cpu's metrics on the same weights.
void expect_close_to_cpu(const std::map<std::string, double>& other, const std::map<std::string, double>& cpu) {
  ASSERT_EQ(other.size(), cpu.size());
  for (auto& [k, v] : cpu) {
    ASSERT_TRUE(other.count(k)) << k;
    if (k == "clip_val_loss") {
      // ref sums in double, cpu in fp32 (oneDNN), cuda in fp32 without FMA contraction: the
      // unit features differ by a few fp32 ulps per component (test-tiny: width <= 64, embed
      // 32 -> cosines within ~1e-6), the logits (x exp(logit_scale) = 14.3) within ~1.5e-5,
      // and an entry of a log-softmax moves by at most twice the largest logit change, so the
      // loss (the mean of the image and text sides) by at most 3e-5. Measured on ref: 9e-8
      // (printed below).
      EXPECT_NEAR(other.at(k), v, 3e-5) << k;
      std::printf("clip_val_loss %.9f, cpu %.9f (difference %.1e)\n", other.at(k), v, std::abs(other.at(k) - v));
    } else {
      // Counts over 9 images / 12 captions: a ~1.5e-5 logit difference reorders only a near
      // tie, which random weights do not give between different images and captions (the
      // PyTorch reference test, eval_cli_test.cpp, holds these to 1e-6 for the same reason).
      EXPECT_DOUBLE_EQ(other.at(k), v) << k;
    }
  }
}

TEST(EvalOnBackend, RefMatchesCpu) {
  expect_close_to_cpu(evaluate_on(ops::backend("ref"), fixture()), evaluate_on(ops::backend("cpu"), fixture()));
}

// ctest -L cuda (eval_cuda): evaluation on the GPU; skipped with the reason without one.
TEST(CudaEval, MatchesCpu) {
  if (const std::string why = test::cuda_missing(); !why.empty()) GTEST_SKIP() << why;
  expect_close_to_cpu(evaluate_on(ops::backend("cuda"), fixture()), evaluate_on(ops::backend("cpu"), fixture()));
}

}  // namespace
}  // namespace oc
