// The places that cross the host/backend boundary (initialisation, bf16 rounding, saving
// and loading weights and checkpoints, the collectives of data-parallel training) run on a
// backend whose memory the host cannot touch (tests/guarded_backend.h: cpu's kernels over
// memory kept PROT_NONE outside its own calls, host_memory() false). A direct host access
// that comes back kills the test with a message; the staged results must be bitwise those
// of the plain `cpu` backend, and the files it writes byte for byte the same.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "core/bf16.h"
#include "core/fs.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/precision.h"
#include "model/weights.h"
#include "optim/adamw.h"
#include "step/comm_io.h"
#include "step/contrastive_step.h"
#include "step/grad_allreduce.h"
#include "step/loss.h"
#include "step/step_plan.h"
#include "guarded_backend.h"
#include "synthetic_batch.h"
#include "test_util.h"
#include "thread_comm.h"
#include "train/checkpoint.h"

namespace oc {
namespace {

using test::guarded;

std::vector<float> host(ops::Backend& be, const float* p, size_t n) {
  std::vector<float> v(n);
  be.copy_to_host(v.data(), p, n * sizeof(float));
  return v;
}
std::vector<float> params_of(Clip& m) { return host(m.backend(), m.params(), m.table().total); }
std::vector<float> grads_of(Clip& m) { return host(m.backend(), m.grads(), m.table().total); }

std::string bytes_of(const std::string& path) { return fs::read_text(path).value(); }
// Whether two files hold the same bytes (a torch .pt names its archive after the file's
// stem, so the tests write files of one name into two folders).
bool same_bytes(const std::string& a, const std::string& b) {
  const std::string x = bytes_of(a), y = bytes_of(b);
  return !x.empty() && x == y;
}

ModelCfg tiny() { return load_model_config("test-tiny"); }

TEST(HostBoundary, GuardCatchesADirectHostAccess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ops::Buffer b = guarded().alloc_floats(16, "death test");
  EXPECT_FALSE(guarded().host_memory());
  float x = -1;
  guarded().copy_to_host(&x, b.f32(), sizeof x);  // through the backend: fine
  EXPECT_EQ(x, 0.0f);
  EXPECT_DEATH(
      {
        volatile float* p = b.f32();
        p[3] = 1.0f;
      },
      "host code touched memory of the guarded backend");
}

TEST(HostBoundary, InitAndBf16RoundingMatchCpu) {
  const ModelCfg cfg = tiny();
  for (Precision prec : {Precision::Fp32, Precision::Bf16, Precision::PureBf16}) {
    Clip g(cfg, guarded()), c(cfg, ops::backend("cpu"));
    g.init(5), c.init(5);
    round_lp_params(g.backend(), g.table(), g.params(), prec);
    round_lp_params(c.backend(), c.table(), c.params(), prec);
    const std::vector<float> pg = params_of(g), pc = params_of(c);
    EXPECT_EQ(pg, pc) << precision_name(prec);
    if (prec == Precision::PureBf16) {  // the rounding did happen: every value is a bf16
      for (float v : pg) ASSERT_EQ(v, round_bf16(v));
    }
  }
}

// One training step as train/optimizer_step.cpp runs it: forward/backward, clipping, AdamW, the
// logit_scale clamp and the bf16 rounding.
void train_step(Clip& m, AdamW& opt, ContrastiveStep& step, const test::SyntheticBatch& b, int64_t B,
                Precision prec) {
  step.forward_backward(b.images.data(), b.tokens.data(), B);
  clip_grad_norm(m.backend(), m.grads(), m.table(), 1.0);
  opt.step(m.params(), m.grads(), 1e-3);
  clamp_logit_scale(m.backend(), m.params() + m.table().find("logit_scale")->offset);
  round_lp_params(m.backend(), m.table(), m.params(), prec);
}

struct Trained {
  std::unique_ptr<Clip> model;
  std::unique_ptr<AdamW> opt;
  std::unique_ptr<ContrastiveStep> step;
};
Trained trained(ops::Backend& be, Precision prec, int steps) {
  const ModelCfg cfg = tiny();
  const int64_t B = 4;
  Trained t;
  t.model = std::make_unique<Clip>(cfg, be);
  t.model->init(3);
  t.model->set_precision(prec);
  round_lp_params(be, t.model->table(), t.model->params(), prec);
  t.model->plan_training(B);
  t.opt = std::make_unique<AdamW>(t.model->table(), AdamWCfg{}, be);
  t.step = std::make_unique<ContrastiveStep>(*t.model, B);
  for (int i = 0; i < steps; ++i)
    train_step(*t.model, *t.opt, *t.step, test::synthetic_batch(cfg, B, 100 + uint64_t(i), 6), B, prec);
  return t;
}

TEST(HostBoundary, TrainingStepsAreBitwiseThoseOfCpu) {
  for (Precision prec : {Precision::Fp32, Precision::Bf16}) {
    Trained g = trained(guarded(), prec, 2), c = trained(ops::backend("cpu"), prec, 2);
    EXPECT_EQ(params_of(*g.model), params_of(*c.model)) << precision_name(prec);
    EXPECT_EQ(grads_of(*g.model), grads_of(*c.model)) << precision_name(prec);
    const size_t n = g.model->table().total;
    EXPECT_EQ(host(guarded(), g.opt->exp_avg_sq(), n), host(ops::backend("cpu"), c.opt->exp_avg_sq(), n));
  }
}

TEST(HostBoundary, WeightsSaveAndLoadAsOnCpu) {
  const std::string dir = test::fresh_dir("host_boundary_weights");
  fs::make_dirs(dir + "/g"), fs::make_dirs(dir + "/c");
  Trained g = trained(guarded(), Precision::Fp32, 1), c = trained(ops::backend("cpu"), Precision::Fp32, 1);
  for (const char* ext : {".safetensors", ".pt"}) {
    const std::string pg = dir + "/g/w" + ext, pc = dir + "/c/w" + ext;
    const int64_t before = guarded().copies_to_host();
    save_weights(*g.model, pg);
    EXPECT_GE(guarded().copies_to_host() - before, int64_t(g.model->table().params.size())) << "one per tensor";
    save_weights(*c.model, pc);
    EXPECT_TRUE(same_bytes(pg, pc)) << ext;
    Clip back(tiny(), guarded());
    load_weights(back, pg);
    EXPECT_EQ(params_of(back), params_of(*c.model)) << ext;
  }
}

TEST(HostBoundary, CheckpointRoundTripsAndResumesBitwise) {
  const std::string dir = test::fresh_dir("host_boundary_ckpt");
  fs::make_dirs(dir + "/g"), fs::make_dirs(dir + "/c");
  Trained g = trained(guarded(), Precision::Fp32, 2), c = trained(ops::backend("cpu"), Precision::Fp32, 2);
  ResumeState st;
  st.global_step = 2, st.step_in_epoch = 2;
  const std::string pg = dir + "/g/epoch_1.pt", pc = dir + "/c/epoch_1.pt";
  save_checkpoint(pg, *g.model, *g.opt, {}, "run", st);
  save_checkpoint(pc, *c.model, *c.opt, {}, "run", st);
  EXPECT_TRUE(same_bytes(pg, pc));
  // Resume on the guarded backend from the file, then one more step on both.
  Trained r = trained(guarded(), Precision::Fp32, 0);
  const Checkpoint ck = load_checkpoint(pg);
  ASSERT_TRUE(ck.has_optimizer);
  restore_checkpoint(ck, *r.model, r.opt.get(), pg);
  EXPECT_EQ(params_of(*r.model), params_of(*c.model));
  const auto batch = test::synthetic_batch(tiny(), 4, 999, 6);
  train_step(*r.model, *r.opt, *r.step, batch, 4, Precision::Fp32);
  train_step(*c.model, *c.opt, *c.step, batch, 4, Precision::Fp32);
  EXPECT_EQ(params_of(*r.model), params_of(*c.model));
  const size_t n = r.model->table().total;
  EXPECT_EQ(host(guarded(), r.opt->exp_avg(), n), host(ops::backend("cpu"), c.opt->exp_avg(), n));
}

// Two ranks as threads: the initial broadcast, the all-gather of features, the
// reduce-scatter of their gradients (--gather-with-grad) and the bucketed gradient
// all-reduce, staged through host buffers on the guarded backends (one per rank).
std::vector<std::vector<float>> dist_run(bool use_guarded) {
  const ModelCfg cfg = tiny();
  constexpr int kWorld = 2;
  const int64_t B = 3;
  const auto batch = test::synthetic_batch(cfg, kWorld * B, 21, 6);
  auto shared = std::make_shared<test::ThreadComm::Shared>(kWorld);
  std::vector<std::vector<float>> out(2 * kWorld);
  auto rank_main = [&](int r) {
    test::ThreadComm comm(shared, r);
    ops::Backend& be = use_guarded ? static_cast<ops::Backend&>(guarded(1 + r)) : ops::backend("cpu");
    Clip model(cfg, be);
    model.init(uint64_t(40 + r));  // different on each rank until the broadcast
    CommIO(be, comm).broadcast(model.params(), int64_t(model.table().total), 0);
    out[size_t(2 * r)] = params_of(model);
    model.plan_training(B);
    ClipLoss::Mode mode;
    mode.gather_with_grad = true;
    ClipLoss loss(model, comm, B, mode);
    SingleBatch step(model, loss);
    GradAllReduce reducer(model, comm);
    const int64_t img = 3 * int64_t(cfg.vision.image_size) * cfg.vision.image_size, ctx = cfg.text.context_length;
    const HostBatch mine{batch.images.data() + r * B * img, batch.tokens.data() + r * B * ctx, B};
    step.forward_backward({&mine, 1});
    reducer.finish();
    out[size_t(2 * r + 1)] = grads_of(model);
  };
  std::thread t1(rank_main, 1);
  rank_main(0);
  t1.join();
  return out;
}

TEST(HostBoundary, DistributedStepStagesThroughTheHost) {
  const auto g = dist_run(true), c = dist_run(false);
  EXPECT_EQ(g[0], g[2]) << "the broadcast gives every rank rank 0's weights";
  EXPECT_EQ(g[1], g[3]) << "every rank holds the same averaged gradient";
  for (size_t i = 0; i < g.size(); ++i) EXPECT_EQ(g[i], c[i]) << "output " << i << " differs from cpu's";
}

}  // namespace
}  // namespace oc
