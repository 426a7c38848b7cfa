#include "step/step_plan.h"

#include "core/check.h"
#include "core/profile.h"

namespace oc {

namespace {
// The loss's temperature (and bias) gradients, `passes` times (one per backward pass).
void add_scalar_grads(Clip& model, const Loss& loss, const LossGrad& g, float passes) {
  ops::add_scalar(model.backend(), model.g().logit_scale, passes * g.d_scale);
  if (loss.learns_bias()) ops::add_scalar(model.backend(), model.g().logit_bias, passes * g.d_bias);
}
Clip::Features forward(Clip& model, BatchImages& images, const HostBatch& b) {
  ImagesIn where = ImagesIn::Host;
  const float* x = images.get(b, &where);
  return model.forward(x, b.tokens, b.size, where);
}
}  // namespace

const float* BatchImages::get(const HostBatch& b, ImagesIn* where) {
  *where = ImagesIn::Host;
  if (!b.uploaded && !b.pixels) return b.images;
  ops::Backend& be = model_.backend();
  const int64_t S = model_.cfg().vision.image_size, n = b.size * 3 * S * S;
  const size_t bytes = size_t(n) * (b.pixels ? sizeof(uint8_t) : sizeof(float));
  const ops::Prefetch* up = b.uploaded;
  if (!up) {  // pixels not prefetched: copied now (a host-memory backend reads them in place)
    staged_ = be.prefetch(b.pixels, bytes, fmt::format("{} images of {}x{} pixels", b.size, S, S));
    up = &staged_;
  }
  OC_CHECK(up->bytes() == bytes, "a prefetched batch of {} bytes for {} images of {}x{} ({} bytes)", up->bytes(),
           b.size, S, S, bytes);
  be.await(*up);  // the backend's stream waits for the upload, the host does not
  *where = ImagesIn::Backend;
  if (!b.pixels) return up->f32();
  OC_CHECK(b.mean && b.std, "a batch of pixels without Normalize's mean and std");
  OC_CHECK(model_.backend_image_layout() == ImageInput::Layout::NCHW,
           "{}: pixels are normalised into NCHW images, the tower computes channels-last", model_.cfg().name);
  if (normalized_.size() < size_t(n)) {
    normalized_.bind(be, fmt::format("{} normalised images, batch {}", model_.cfg().name, b.size));
    normalized_.resize(size_t(n), false);
  }
  be.run(ops::NormalizeImagesArgs{.out = normalized_.data(), .px = static_cast<const uint8_t*>(up->data()),
                                  .mean = {b.mean, 3}, .std = {b.std, 3}, .B = b.size, .S = S});
  return normalized_.data();
}

double SingleBatch::forward_backward(std::span<const HostBatch> batches) {
  OC_CHECK(batches.size() == 1, "a single-batch step got {} batches", batches.size());
  const HostBatch& b = batches[0];
  model_.zero_grads();
  Clip::Features f;
  { OC_PROFILE("step.forward"); f = forward(model_, images_, b); }
  OC_PROFILE("step.loss+backward");
  const LossGrad g = loss_.evaluate(f.image, f.text, b.size);
  add_scalar_grads(model_, loss_, g, 1.0f);
  model_.backward(g.d_img, g.d_txt);
  return g.loss;
}

Accumulation::Accumulation(Clip& model, Loss& loss, int64_t B, int64_t K)
    : model_(model), loss_(loss), B_(B), K_(K), images_(model) {
  OC_CHECK(B >= 1 && K >= 1, "accumulation needs micro-batches (got {} of {} samples)", K, B);
  const std::string what = fmt::format("{} feature cache, {} x {} samples", model.cfg().name, K, B);
  cache_img_.bind(model.backend(), what), cache_txt_.bind(model.backend(), what);
  const size_t n = size_t(K * B * model.cfg().embed_dim);
  cache_img_.resize(n), cache_txt_.resize(n);
}

double Accumulation::forward_backward(std::span<const HostBatch> batches) {
  ops::Backend& be = model_.backend();
  const int64_t BE = B_ * model_.cfg().embed_dim;
  OC_CHECK(int64_t(batches.size()) == K_, "accumulation over {} micro-batches got {}", K_, batches.size());
  for (const HostBatch& b : batches) OC_CHECK(b.size == B_, "a micro-batch of {} samples, planned {}", b.size, B_);
  // 1. The features of every micro-batch (OpenCLIP: accum_features, under no_grad).
  for (int64_t j = 0; j < K_; ++j) {
    OC_PROFILE("step.forward");
    const Clip::Features f = forward(model_, images_, batches[size_t(j)]);
    be.copy(cache_img_.data() + j * BE, f.image, sizeof(float) * size_t(BE));
    be.copy(cache_txt_.data() + j * BE, f.text, sizeof(float) * size_t(BE));
  }
  // 2. OpenCLIP's pass j evaluates the loss over the cache with slot j live. Re-running
  // micro-batch j reproduces its cached features bit for bit (deterministic kernels), so the
  // K evaluations are this one, its gradient split by slot; with several ranks the loss
  // gathers (or exchanges) every rank's K*B rows.
  const LossGrad g = loss_.evaluate(cache_img_.data(), cache_txt_.data(), K_ * B_);
  // 3. Backward through each micro-batch.
  model_.zero_grads();
  for (int64_t j = 0; j < K_; ++j) {
    { OC_PROFILE("step.forward"); forward(model_, images_, batches[size_t(j)]); }
    OC_PROFILE("step.loss+backward");
    model_.backward(g.d_img + j * BE, g.d_txt + j * BE);
  }
  add_scalar_grads(model_, loss_, g, float(K_));
  return g.loss;
}

std::unique_ptr<StepPlan> make_step_plan(Clip& model, Loss& loss, int64_t batch, int64_t accum_freq) {
  if (accum_freq <= 1) return std::make_unique<SingleBatch>(model, loss);
  return std::make_unique<Accumulation>(model, loss, batch, accum_freq);
}

}  // namespace oc
