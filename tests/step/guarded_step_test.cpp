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
#include <utility>
#include <vector>

#include "dist/comm.h"
#include "guarded_backend.h"
#include "image/transform.h"
#include "model/clip.h"
#include "model/config.h"
#include "ops/registry.h"
#include "step/loss.h"
#include "step/step_plan.h"
#include "synthetic_batch.h"
#include "thread_comm.h"

namespace oc {
namespace {

constexpr int64_t kB = 3;

// How a batch's images come: N(0,1) floats; floats normalised on the host from random uint8
// pixels (image/transform.h, the loader's path); those pixels, normalised by the plan on the
// backend (ops/pixels.h, the trainer's path).
enum class Images { Floats, PixelFloats, Pixels };

struct Case {
  bool siglip;
  int world, accum;
  bool prefetch = false;  // the images uploaded ahead (Backend::prefetch), as the trainer does
  Images images = Images::Floats;
};

// Random pixels for a synthetic batch, and its images made from them as the loader makes them.
std::vector<uint8_t> pixels_for(test::SyntheticBatch& d, int64_t B, int64_t S, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint8_t> px(size_t(B * S * S * 3));
  for (auto& v : px) v = uint8_t(rng.below(256));
  const size_t plane = size_t(3 * S * S);
  for (int64_t b = 0; b < B; ++b)
    normalize_chw(px.data() + b * plane, int(S), PreprocessCfg{}, std::span<float>(d.images.data() + b * plane, plane));
  return px;
}

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
  std::vector<ops::Prefetch> uploads;
  std::vector<std::vector<uint8_t>> pixels;
  const PreprocessCfg pre;
  const int64_t S = cfg.vision.image_size;
  for (auto& d : data) {
    if (c.images != Images::Floats) pixels.push_back(pixels_for(d, kB, S, 7 + pixels.size()));
    HostBatch h{d.images.data(), d.tokens.data(), kB};
    const void* src = h.images;
    size_t bytes = d.images.size() * sizeof(float);
    if (c.images == Images::Pixels) {
      h = {nullptr, d.tokens.data(), kB, nullptr, pixels.back().data(), pre.mean.data(), pre.std.data()};
      src = h.pixels, bytes = pixels.back().size();
    }
    batches.push_back(h);
    if (!c.prefetch) continue;
    uploads.push_back(be.prefetch(src, bytes, "test batch"));
    // Where that was a copy, the host's images go: a plan that read them would not match.
    if (!be.host_memory()) std::fill(d.images.begin(), d.images.end(), NAN);
    if (!be.host_memory() && c.images == Images::Pixels) std::fill(pixels.back().begin(), pixels.back().end(), 0);
  }
  for (size_t j = 0; j < uploads.size(); ++j) batches[j].uploaded = &uploads[j];
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

// The op against the loader's table (image/transform.h): every byte value in every channel,
// CLIP's and SigLIP's Normalize, on each host backend and the guarded one: the same bits.
TEST(GuardedStep, NormalizeImagesIsTheLoadersArithmetic) {
  const int64_t S = 16;  // 256 pixels: every value once per channel, in a different order each
  std::vector<uint8_t> px(size_t(S * S * 3));
  for (int64_t i = 0; i < S * S; ++i)
    for (int64_t c = 0; c < 3; ++c) px[size_t(i * 3 + c)] = uint8_t((i * (2 * c + 1) + 17 * c) % 256);
  PreprocessCfg siglip;
  siglip.mean = {0.5f, 0.5f, 0.5f}, siglip.std = {0.5f, 0.5f, 0.5f};
  for (const PreprocessCfg& pre : {PreprocessCfg{}, siglip}) {
    std::vector<float> want(px.size());
    normalize_chw(px.data(), int(S), pre, want);
    ops::Backend& guarded = test::guarded();
    for (ops::Backend* be : {&ops::backend("ref"), &ops::backend("cpu"), &guarded}) {
      ops::Buffer in = be->alloc(px.size(), "pixels"), out = be->alloc_floats(px.size(), "images");
      be->copy_from_host(in.data(), px.data(), px.size());
      be->run(ops::NormalizeImagesArgs{.out = out.f32(), .px = static_cast<const uint8_t*>(in.data()),
                                       .mean = pre.mean, .std = pre.std, .B = 1, .S = S});
      std::vector<float> got(px.size());
      be->copy_to_host(got.data(), out.data(), got.size() * sizeof(float));
      EXPECT_EQ(got, want) << be->name() << ", mean " << pre.mean[0];
    }
  }
}

// uint8 pixels normalised by the plan on the backend (prefetched or not) give the step the
// loader's floats: loss and gradients bitwise those of the fp32 images made on the host.
TEST(GuardedStep, PixelsNormalisedOnTheBackendMatchTheLoadersFloats) {
  for (const auto& [accum, prefetch] : {std::pair{1, true}, std::pair{2, false}}) {
    SCOPED_TRACE(testing::Message() << "accum " << accum << (prefetch ? ", prefetched" : ""));
    const Case floats{false, 1, accum, false, Images::PixelFloats}, px{false, 1, accum, prefetch, Images::Pixels};
    const std::vector<RankOut> want = run(floats, false), g = run(px, true), cpu = run(px, false);
    EXPECT_TRUE(std::isfinite(want[0].loss));
    EXPECT_EQ(g[0].loss, want[0].loss);
    EXPECT_EQ(g[0].grads, want[0].grads);
    EXPECT_EQ(cpu[0].loss, want[0].loss);
    EXPECT_EQ(cpu[0].grads, want[0].grads);
  }
}

// The batches' images prefetched into the backend's memory (the trainer's next-step uploads):
// the plan awaits them and the towers read them there; results bitwise those of the host path.
TEST(GuardedStep, PrefetchedImagesMatchTheHostPath) {
  for (const auto& [siglip, accum] : {std::pair{false, 1}, std::pair{true, 2}}) {
    SCOPED_TRACE(testing::Message() << (siglip ? "siglip" : "clip") << ", accum " << accum);
    const Case host{siglip, 1, accum}, ahead{siglip, 1, accum, true};
    const std::vector<RankOut> g = run(ahead, true), cpu_ahead = run(ahead, false), cpu = run(host, false);
    EXPECT_TRUE(std::isfinite(g[0].loss));
    EXPECT_EQ(g[0].loss, cpu[0].loss);
    EXPECT_EQ(g[0].grads, cpu[0].grads);
    EXPECT_EQ(cpu_ahead[0].loss, cpu[0].loss);
    EXPECT_EQ(cpu_ahead[0].grads, cpu[0].grads);
  }
}

}  // namespace
}  // namespace oc
