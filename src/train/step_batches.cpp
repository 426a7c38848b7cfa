#include "train/step_batches.h"

#include <fmt/format.h>

#include "core/check.h"

namespace oc {

StepBatches::StepBatches(data::DataLoader& loader, Clip& model, int per_step)
    : loader_(loader),
      be_(model.backend()),
      per_step_(per_step),
      prefetch_(model.takes_backend_images()),
      channels_last_(prefetch_ && model.backend_image_layout() == ImageInput::Layout::NHWC),
      // No backend normalises pixels into a channels-last batch yet: such a tower's floats
      // are uploaded as they are.
      pixels_(prefetch_ && !be_.host_memory() && !channels_last_) {
  OC_CHECK(per_step >= 1, "{} batches per step", per_step);
  const int64_t S = loader_.config().preprocess.size;
  OC_CHECK(!prefetch_ || S == model.cfg().vision.image_size, "the loader makes {}x{} images for a {}x{} tower", S, S,
           model.cfg().vision.image_size, model.cfg().vision.image_size);
  image_bytes_ = 3 * S * S * int64_t(pixels_ ? sizeof(uint8_t) : sizeof(float));
  mean_ = loader_.config().preprocess.mean, std_ = loader_.config().preprocess.std;
  // The step's batches and the next step's are held at once.
  if (prefetch_)
    loader_.set_batch_memory({.alloc = &be_.host_allocator(),
                              .consumer_batches = 2 * per_step,
                              .pixels = pixels_,
                              .channels_last = channels_last_});
  pos_ = loader_.position();
}

void StepBatches::drop(Group* g) {
  g->view.clear();
  g->uploads.clear();  // releases the uploads before their host buffers go
  g->batches.clear();
  g->complete = g->taken = false;
}

void StepBatches::restart() {
  drop(&cur_);
  drop(&ahead_);
  pos_ = loader_.position();
}

void StepBatches::take(Group* g) {
  drop(g);
  g->taken = true;
  while (int(g->batches.size()) < per_step_) {
    std::optional<data::Batch> b = loader_.next();
    if (!b) return;  // the epoch ended: an incomplete group, dropped by next_step
    g->batches.push_back(std::move(*b));
  }
  g->complete = true;
  g->pos = loader_.position();
  for (const data::Batch& b : g->batches) {
    HostBatch h{b.images.data(), b.tokens.data(), b.size};
    if (pixels_) h.images = nullptr, h.pixels = b.pixels.data(), h.mean = mean_.data(), h.std = std_.data();
    if (prefetch_) {
      const void* src = pixels_ ? static_cast<const void*>(h.pixels) : h.images;
      const size_t bytes = pixels_ ? b.pixels.size() : b.images.size() * sizeof(float);
      OC_CHECK(bytes == size_t(b.size * image_bytes_), "batch {} has {} bytes of images for {} rows", b.index, bytes,
               b.size);
      g->uploads.push_back(be_.prefetch(src, bytes, fmt::format("a batch of {} images", b.size)));
    }
    g->view.push_back(h);
  }
  for (size_t i = 0; i < g->uploads.size(); ++i) g->view[i].uploaded = &g->uploads[i];
}

bool StepBatches::next_step() {
  recycle_step();
  if (!ahead_.taken) take(&ahead_);
  std::swap(cur_, ahead_);
  drop(&ahead_);
  if (!cur_.complete) {
    drop(&cur_);
    return false;
  }
  pos_ = cur_.pos;
  return true;
}

void StepBatches::take_ahead() {
  if (!ahead_.taken) take(&ahead_);
}

void StepBatches::recycle_step() {
  cur_.view.clear();
  cur_.uploads.clear();
  for (data::Batch& b : cur_.batches) loader_.recycle(std::move(b));
  cur_.batches.clear();
  cur_.complete = cur_.taken = false;
}

}  // namespace oc
