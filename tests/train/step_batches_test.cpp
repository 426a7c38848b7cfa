// StepBatches (train/step_batches.h): the run's batches by step, the next step's taken from
// the loader once the current step's backward is queued, their uint8 pixels prefetched into
// the backend's memory. The steps see the loader's batches in its order, the pixels
// normalise to the loader's float images bit for bit, the uploads hold the same bytes, and
// the position a checkpoint saves is the one after the step's own batches, not after the ones
// taken ahead.
#include "train/step_batches.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "guarded_backend.h"
#include "image/transform.h"
#include "model/clip.h"
#include "model/config.h"
#include "text/text_tokenizer.h"

namespace oc {
namespace {

data::DataConfig synthetic_cfg() {
  data::DataConfig c;
  c.type = data::DatasetType::SyntheticLearnable;
  c.num_samples = 28;  // 7 batches of 4: three steps of two, the seventh left over
  c.batch_size = 4;
  c.workers = 2;
  c.seed = 5;
  c.preprocess.size = 32;  // test-tiny's image size
  c.context_length = 16;
  return c;
}

std::shared_ptr<const TextTokenizer> tokenizer() {
  static std::shared_ptr<const TextTokenizer> t = make_text_tokenizer("", false, 16);
  return t;
}

struct Seen {
  std::vector<std::vector<float>> images;
  std::vector<std::string> positions;  // the loader's position after each batch
};

Seen plain_epoch(int64_t epoch) {
  data::DataLoader dl(synthetic_cfg(), tokenizer());
  dl.start_epoch(epoch);
  Seen s;
  while (auto b = dl.next()) {
    s.images.emplace_back(b->images.begin(), b->images.end());
    s.positions.push_back(dl.position().to_json().dump());
  }
  return s;
}

// One batch of a step against the plain loader's floats `w`: on a device-like backend uint8
// pixels uploaded into its memory; on a host backend the loader's floats, read in place.
void expect_batch(ops::Backend& be, const HostBatch& b, const std::vector<float>& w) {
  ASSERT_EQ(b.size, 4);
  ASSERT_NE(b.uploaded, nullptr);
  be.await(*b.uploaded);
  if (be.host_memory()) {
    EXPECT_EQ(b.pixels, nullptr);
    EXPECT_EQ(std::vector<float>(b.images, b.images + w.size()), w);
    EXPECT_EQ(b.uploaded->data(), static_cast<const void*>(b.images));  // nothing copied
    return;
  }
  EXPECT_EQ(b.images, nullptr);
  ASSERT_NE(b.pixels, nullptr);
  const size_t plane = 3 * 32 * 32;
  std::vector<float> f(w.size());
  for (size_t r = 0; r < 4; ++r)
    normalize_chw(b.pixels + r * plane, 32, synthetic_cfg().preprocess, std::span<float>(f.data() + r * plane, plane));
  EXPECT_EQ(f, w);
  EXPECT_EQ(b.mean[0], synthetic_cfg().preprocess.mean[0]);
  EXPECT_EQ(b.std[2], synthetic_cfg().preprocess.std[2]);
  ASSERT_EQ(b.uploaded->bytes(), w.size());  // a byte per float
  std::vector<uint8_t> up(w.size());
  be.copy_to_host(up.data(), b.uploaded->data(), b.uploaded->bytes());
  EXPECT_EQ(up, std::vector<uint8_t>(b.pixels, b.pixels + w.size()));
}

void expect_steps(ops::Backend& be) {
  const Seen want = plain_epoch(1);
  ASSERT_EQ(want.images.size(), 7u);
  Clip model(load_model_config("test-tiny"), be);
  ASSERT_TRUE(model.takes_backend_images());
  data::DataLoader dl(synthetic_cfg(), tokenizer());
  StepBatches steps(dl, model, 2);
  EXPECT_TRUE(steps.prefetching());
  EXPECT_EQ(steps.pixels(), !be.host_memory());
  dl.start_epoch(1);
  steps.restart();
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE(testing::Message() << "step " << k);
    ASSERT_TRUE(steps.next_step());
    ASSERT_EQ(steps.step().size(), 2u);
    for (size_t i = 0; i < 2; ++i) expect_batch(be, steps.step()[i], want.images[2 * k + i]);
    EXPECT_EQ(steps.position().to_json().dump(), want.positions[2 * k + 1]);
    steps.take_ahead();  // the next step's batches: the saved position does not move
    EXPECT_EQ(steps.position().to_json().dump(), want.positions[2 * k + 1]);
    steps.recycle_step();
  }
  EXPECT_FALSE(steps.next_step());  // one batch left: not a step
}

TEST(StepBatches, GuardedBackendGetsTheLoadersBatchesUploadedAhead) { expect_steps(test::guarded(2)); }

TEST(StepBatches, HostBackendReadsTheLoadersBuffersInPlace) { expect_steps(ops::backend("cpu")); }

// A tower that computes channels-last (ModifiedResNet) gets the loader's floats in HWC order,
// uploaded ahead as they are (no pixels: nothing normalises them channels-last yet): each
// image the plain loader's CHW floats, transposed, bit for bit.
void expect_channels_last(ops::Backend& be) {
  const ModelCfg cfg = load_model_config(OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json");
  data::DataConfig dc = synthetic_cfg();
  const int64_t S = dc.preprocess.size = cfg.vision.image_size, plane = S * S;
  data::DataLoader plain(dc, tokenizer());
  plain.start_epoch(0);
  const std::optional<data::Batch> want = plain.next();
  ASSERT_TRUE(want);
  data::DataLoader dl(dc, tokenizer());
  Clip model(cfg, be);
  ASSERT_TRUE(model.takes_backend_images());
  ASSERT_EQ(model.backend_image_layout(), ImageInput::Layout::NHWC);
  StepBatches steps(dl, model, 1);
  EXPECT_TRUE(steps.prefetching());
  EXPECT_FALSE(steps.pixels());
  dl.start_epoch(0);
  steps.restart();
  ASSERT_TRUE(steps.next_step());
  const HostBatch& b = steps.step()[0];
  ASSERT_EQ(b.size, 4);
  EXPECT_EQ(b.pixels, nullptr);
  ASSERT_NE(b.uploaded, nullptr);
  ASSERT_EQ(b.uploaded->bytes(), want->images.size() * sizeof(float));
  be.await(*b.uploaded);
  std::vector<float> got(want->images.size()), hwc(want->images.size());
  be.copy_to_host(got.data(), b.uploaded->data(), b.uploaded->bytes());
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < plane; ++i)
        hwc[size_t((r * plane + i) * 3 + c)] = want->images[size_t((r * 3 + c) * plane + i)];
  EXPECT_EQ(got, hwc);
}

TEST(StepBatches, GuardedBackendGetsChannelsLastFloatsForAChannelsLastTower) { expect_channels_last(test::guarded(2)); }

TEST(StepBatches, HostBackendReadsChannelsLastFloatsInPlace) { expect_channels_last(ops::backend("cpu")); }

}  // namespace
}  // namespace oc
