// The gradient each distributed loss mode leaves after DDP's average, against OpenCLIP's
// formulas computed by one process on the global batch. Two ranks run as two threads of
// this process over an in-process communicator (ThreadComm), so the test needs no mpirun
// and sees every rank's gradients; GradAllReduce does the averaging as in training.
//
// OpenCLIP 2.24 (loss.py gather_features + DDP), for the global batch N = world * B and
// the single-process gradient G of its loss (towers T, logit_scale s):
//   default:                     T / world, s          (own slice re-inserted, DDP averages)
//   --gather-with-grad:          T, s
//   --local-loss --gather-with-grad: T, s
//   --local-loss:                T_rows, s             (gathered features carry no gradient
//                                                        and the own slice is not re-inserted:
//                                                        only this rank's rows as queries)
//   ours, --global-batch-gradient: T, s
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <memory>
#include <thread>

#include "core/check.h"
#include "core/rng.h"
#include "dist/comm.h"
#include "model/clip.h"
#include "model/config.h"
#include "ops/cpu/loss.h"
#include "step/contrastive_step.h"
#include "step/grad_allreduce.h"
#include "step/loss.h"
#include "step/step_plan.h"
#include "synthetic_batch.h"
#include "thread_comm.h"

namespace oc {
namespace {

using test::ThreadComm;

constexpr int kWorld = 2, kB = 4, kN = kWorld * kB;
constexpr int kMaxWorld = 4;  // SigLIP runs 2, 3 and 4 ranks (remainder hop, bidir hop, both)

using Batch = test::SyntheticBatch;

// The global batch of the widest world, captions of 1..ctx-2 ids.
Batch make_batch(const ModelCfg& cfg) {
  return test::synthetic_batch(cfg, kMaxWorld * kB, 7, cfg.text.context_length - 2);
}

// Rank 0's averaged gradient after one distributed step in `mode`.
std::vector<float> dist_gradient(const ModelCfg& cfg, const Batch& batch, ClipLoss::Mode mode) {
  auto shared = std::make_shared<ThreadComm::Shared>(kWorld);
  std::vector<std::vector<float>> grads(kWorld);
  auto rank_main = [&](int r) {
    ThreadComm comm(shared, r);
    Clip model(cfg);
    model.init(11);
    model.plan_training(kB);
    ClipLoss loss(model, comm, kB, mode);
    SingleBatch step(model, loss);
    GradAllReduce reducer(model, comm);
    const int64_t img = 3 * int64_t(cfg.vision.image_size) * cfg.vision.image_size, ctx = cfg.text.context_length;
    const HostBatch mine{batch.images.data() + r * kB * img, batch.tokens.data() + r * kB * ctx, kB};
    step.forward_backward({&mine, 1});
    reducer.finish();
    grads[size_t(r)].assign(model.grads(), model.grads() + model.table().total);
  };
  std::thread t1(rank_main, 1);
  rank_main(0);
  t1.join();
  EXPECT_EQ(grads[0], grads[1]) << "every rank must hold the same averaged gradient";
  return grads[0];
}

// One process on the global batch: the full gradient, or only the row terms (each sample
// as a query against detached columns) when rows_only.
std::vector<float> single_gradient(const ModelCfg& cfg, const Batch& batch, bool rows_only) {
  Clip model(cfg);
  model.init(11);
  model.plan_training(kN);
  if (!rows_only) {
    ContrastiveStep step(model, kN);
    step.forward_backward(batch.images.data(), batch.tokens.data(), kN);
    return std::vector<float>(model.grads(), model.grads() + model.table().total);
  }
  const int64_t E = cfg.embed_dim;
  model.zero_grads();
  Clip::Features f = model.forward(batch.images.data(), batch.tokens.data(), kN);
  std::vector<float> di(size_t(kN * E)), dt(di.size()), dia(di.size()), dta(di.size()), scratch(size_t(2 * kN * kN));
  float d_scale = 0;
  ops::clip_loss_forward_backward(di.data(), dt.data(), dia.data(), dta.data(), &d_scale, scratch.data(), f.image,
                                  f.text, f.image, f.text, std::exp(model.logit_scale()), kN, kN, E, 0);
  model.g().logit_scale[0] += d_scale;
  model.backward(di.data(), dt.data());  // rows only: dia/dta (the column terms) dropped
  return std::vector<float>(model.grads(), model.grads() + model.table().total);
}

// max |got - tower_factor * want| / max |want| over the towers, and the same for logit_scale.
// Both sides differ only in summation order (batch 4 vs 8 GEMMs, rows split over ranks):
// ~1e-6 relative measured; 1e-4 is far below any convention error (a factor of 2, or the
// own-column terms, which are O(1/world) of the column gradient).
void expect_gradient(const ModelCfg& cfg, const std::vector<float>& got, const std::vector<float>& want,
                     double tower_factor, const char* what) {
  Clip shape(cfg);
  const size_t ls = shape.table().find("logit_scale")->offset;
  double d = 0, m = 1e-12;
  for (size_t i = 0; i < got.size(); ++i) {
    if (i == ls) continue;
    d = std::max(d, std::fabs(double(got[i]) - tower_factor * want[i]));
    m = std::max(m, std::fabs(tower_factor * want[i]));
  }
  EXPECT_LE(d / m, 1e-4) << what << ": tower gradient";
  EXPECT_NEAR(got[ls], want[ls], 1e-4 * std::fabs(want[ls]) + 1e-7) << what << ": logit_scale gradient";
  std::printf("[%s] tower gradient error %.2e\n", what, d / m);
}

TEST(DistStepModes, GradientsEqualOpenClipsPerMode) {
  const ModelCfg cfg = load_model_config("test-tiny");
  const Batch batch = make_batch(cfg);
  const std::vector<float> full = single_gradient(cfg, batch, false), rows = single_gradient(cfg, batch, true);
  using M = ClipLoss::Mode;
  expect_gradient(cfg, dist_gradient(cfg, batch, M{false, false, false}), full, 1.0 / kWorld, "default (OpenCLIP)");
  expect_gradient(cfg, dist_gradient(cfg, batch, M{false, false, true}), full, 1.0, "--global-batch-gradient");
  expect_gradient(cfg, dist_gradient(cfg, batch, M{false, true, false}), full, 1.0, "--gather-with-grad");
  expect_gradient(cfg, dist_gradient(cfg, batch, M{true, true, false}), full, 1.0, "--local-loss --gather-with-grad");
  expect_gradient(cfg, dist_gradient(cfg, batch, M{true, false, false}), rows, 1.0, "--local-loss");
}


// SigLIP: W ranks of B samples after DDP's average equal one process on the global batch
// (OpenCLIP's per-rank loss divides by the local batch; the average over W ranks makes it
// the global batch's 1/N), for the towers, logit_scale and logit_bias. W = 2 uses only the
// one-way hop, W = 3 one bidirectional hop, W = 4 both.
std::vector<float> siglip_gradient(const ModelCfg& cfg, const Batch& batch, int world) {
  auto shared = std::make_shared<ThreadComm::Shared>(world);
  std::vector<std::vector<float>> grads(static_cast<size_t>(world));
  const int64_t img = 3 * int64_t(cfg.vision.image_size) * cfg.vision.image_size, ctx = cfg.text.context_length;
  const int64_t n = world == 1 ? kB * kMaxWorld : kB;  // world 1: one process on every sample
  auto rank_main = [&](int r) {
    ThreadComm comm(shared, r);
    Clip model(cfg);
    model.init(11);
    model.plan_training(n);
    SigLipLoss loss(model, comm, n);
    SingleBatch step(model, loss);
    GradAllReduce reducer(model, comm);
    const HostBatch mine{batch.images.data() + r * n * img, batch.tokens.data() + r * n * ctx, n};
    step.forward_backward({&mine, 1});
    reducer.finish();
    grads[size_t(r)].assign(model.grads(), model.grads() + model.table().total);
  };
  std::vector<std::thread> others;
  for (int r = 1; r < world; ++r) others.emplace_back(rank_main, r);
  rank_main(0);
  for (auto& t : others) t.join();
  for (int r = 1; r < world; ++r) EXPECT_EQ(grads[0], grads[size_t(r)]) << "rank " << r;
  return grads[0];
}

TEST(DistStepModes, SigLipNeighbourExchangeEqualsOneProcess) {
  ModelCfg cfg = load_model_config("test-tiny");
  cfg.init_logit_scale = std::log(10.0), cfg.init_logit_bias = -10.0;
  for (int world : {2, 3, 4}) {
    Batch batch = make_batch(cfg);  // kMaxWorld * kB samples; the first world * kB are used
    const int64_t img = 3 * int64_t(cfg.vision.image_size) * cfg.vision.image_size, ctx = cfg.text.context_length;
    batch.images.resize(size_t(world * kB * img)), batch.tokens.resize(size_t(world * kB * ctx));
    const std::vector<float> dist = siglip_gradient(cfg, batch, world);
    // One process on the same world * kB samples (ThreadComm of one rank: no exchange).
    auto shared = std::make_shared<ThreadComm::Shared>(1);
    ThreadComm comm(shared, 0);
    Clip model(cfg);
    model.init(11);
    model.plan_training(world * kB);
    SigLipLoss loss(model, comm, world * kB);
    SingleBatch step(model, loss);
    const HostBatch all{batch.images.data(), batch.tokens.data(), world * kB};
    step.forward_backward({&all, 1});
    const std::vector<float> one(model.grads(), model.grads() + model.table().total);
    const size_t bias = model.table().find("logit_bias")->offset;
    EXPECT_NEAR(dist[bias], one[bias], 1e-4 * std::fabs(one[bias]) + 1e-7) << world << " ranks: logit_bias gradient";
    const std::string what = "siglip, " + std::to_string(world) + " ranks";
    expect_gradient(cfg, dist, one, 1.0, what.c_str());
  }
}

}  // namespace
}  // namespace oc
