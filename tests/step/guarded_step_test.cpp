// The training step with each loss and each plan on a backend whose memory the host cannot
// touch (tests/guarded_backend.h): the batches arrive as host arrays and must be uploaded,
// every op must get backend memory, the collectives stage through the host (CommIO). One
// rank runs on the single-process communicator, two ranks as threads (ThreadComm). Loss
// and gradients must be bitwise those of `cpu` (the same kernels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "dist/comm.h"
#include "guarded_backend.h"
#include "model/clip.h"
#include "model/config.h"
#include "step/loss.h"
#include "step/step_plan.h"
#include "synthetic_batch.h"
#include "thread_comm.h"

namespace oc {
namespace {

constexpr int64_t kB = 3;

struct Case {
  bool siglip;
  int world, accum;
};

struct RankOut {
  double loss = 0;
  std::vector<float> grads;
};

RankOut rank_step(const Case& c, ops::Backend& be, dist::Communicator& comm) {
  ModelCfg cfg = load_model_config("test-tiny");
  if (c.siglip) cfg.init_logit_scale = std::log(10.0), cfg.init_logit_bias = -10.0;
  Clip model(cfg, be);
  model.init(17);
  model.plan_training(kB);
  std::unique_ptr<Loss> loss;
  if (c.siglip) loss = std::make_unique<SigLipLoss>(model, comm, c.accum * kB);
  else loss = std::make_unique<ClipLoss>(model, comm, c.accum * kB, ClipLoss::Mode{.gather_with_grad = true});
  std::unique_ptr<StepPlan> plan = make_step_plan(model, *loss, kB, c.accum);
  std::vector<test::SyntheticBatch> data;
  std::vector<HostBatch> batches;
  for (int j = 0; j < c.accum; ++j) data.push_back(test::synthetic_batch(cfg, kB, uint64_t(100 * comm.rank() + j), 6));
  for (const auto& d : data) batches.push_back({d.images.data(), d.tokens.data(), kB});
  RankOut o;
  o.loss = plan->forward_backward(batches);
  o.grads.resize(model.table().total);
  be.copy_to_host(o.grads.data(), model.grads(), sizeof(float) * o.grads.size());
  return o;
}

std::vector<RankOut> run(const Case& c, bool use_guarded) {
  auto backend = [&](int r) -> ops::Backend& {
    return use_guarded ? static_cast<ops::Backend&>(test::guarded(r)) : ops::backend("cpu");
  };
  std::vector<RankOut> out(size_t(c.world));
  if (c.world == 1) {
    const std::unique_ptr<dist::Communicator> single = dist::make_single();
    out[0] = rank_step(c, backend(0), *single);
    return out;
  }
  auto shared = std::make_shared<test::ThreadComm::Shared>(c.world);
  auto rank_main = [&](int r) {
    test::ThreadComm comm(shared, r);
    out[size_t(r)] = rank_step(c, backend(r), comm);
  };
  std::vector<std::thread> others;
  for (int r = 1; r < c.world; ++r) others.emplace_back(rank_main, r);
  rank_main(0);
  for (auto& t : others) t.join();
  return out;
}

TEST(GuardedStep, EachLossAndPlanUploadsItsBatchesAndMatchesCpu) {
  for (bool siglip : {false, true})
    for (int world : {1, 2})
      for (int accum : {1, 2}) {
        const Case c{siglip, world, accum};
        const std::vector<RankOut> g = run(c, true), cpu = run(c, false);
        for (int r = 0; r < world; ++r) {
          SCOPED_TRACE(testing::Message() << (siglip ? "siglip" : "clip") << ", " << world << " ranks, accum "
                                          << accum << ", rank " << r);
          EXPECT_TRUE(std::isfinite(g[size_t(r)].loss));
          float largest = 0;
          for (float x : g[size_t(r)].grads) largest = std::max(largest, std::fabs(x));
          EXPECT_GT(largest, 0.0f) << "the step left no gradient";
          EXPECT_EQ(g[size_t(r)].loss, cpu[size_t(r)].loss);
          EXPECT_EQ(g[size_t(r)].grads, cpu[size_t(r)].grads);
        }
      }
}

}  // namespace
}  // namespace oc
