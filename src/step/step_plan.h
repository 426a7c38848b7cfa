// How one optimizer step's batches go through the towers and a Loss (loss.h): one batch, or
// OpenCLIP's --accum-freq K micro-batches against cached features. A plan composes with
// either loss and with any number of ranks (the loss holds the communicator). The
// optimizer step is separate (optim/adamw.h), so the trainer can check gradients, clip,
// skip non-finite steps and all-reduce in between.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "model/clip.h"
#include "step/loss.h"

namespace oc {

// One batch as the data loader hands it over: host arrays (the vision tower uploads the
// images and the text tower the token ids, copy_from_host). The images may instead be uint8
// pixels that the plan normalises on the backend (ops/pixels.h: the same floats), and either
// may already be on their way to the backend (Backend::prefetch, started by the trainer while
// the previous step ran; docs/CUDA.md "Batches"): the plan awaits them before the first op
// that reads them. Both need a model that takes_backend_images().
struct HostBatch {
  const float* images;    // [size, 3, image_size, image_size]; null when the batch has pixels.
                          // Uploaded ones are in the tower's compute layout (Clip::backend_image_layout)
  const int32_t* tokens;  // [size, context_length]
  int64_t size;
  const ops::Prefetch* uploaded = nullptr;  // the images (or pixels) in backend memory, or null
  const uint8_t* pixels = nullptr;          // [size, image_size, image_size, 3] uint8 instead of images
  const float* mean = nullptr;              // with pixels: Normalize's 3 means and 3 stds
  const float* std = nullptr;
};

// A batch's images as the towers take them: fp32 in host memory, or in backend memory after
// the wait for their upload and, for pixels, the normalisation into a buffer of its own.
class BatchImages {
 public:
  explicit BatchImages(Clip& model) : model_(model) {}
  // Valid until the next call.
  const float* get(const HostBatch& b, ImagesIn* where);

 private:
  Clip& model_;
  ops::FloatArena normalized_;  // [B, 3, S, S] from pixels
  ops::Prefetch staged_;        // pixels that were not prefetched, copied now
};

class StepPlan {
 public:
  virtual ~StepPlan() = default;
  // Zeroes the model's gradients and leaves the step's in model.grads(), unreduced across
  // ranks (the caller averages them, grad_allreduce.h); returns the loss's value.
  virtual double forward_backward(std::span<const HostBatch> batches) = 0;
  // Whether every parameter's gradient is final after one backward pass, so a block's
  // all-reduce may start as soon as backward has finished it (GradAllReduce::set_overlap).
  virtual bool one_backward_pass() const = 0;
};

// One batch: forward, the loss, backward.
class SingleBatch final : public StepPlan {
 public:
  SingleBatch(Clip& model, Loss& loss) : model_(model), loss_(loss), images_(model) {}
  double forward_backward(std::span<const HostBatch> batches) override;
  bool one_backward_pass() const override { return true; }

 private:
  Clip& model_;
  Loss& loss_;
  BatchImages images_;
};

// OpenCLIP's --accum-freq K: the loss over all K micro-batches of B samples (on every rank),
// gradients through one micro-batch at a time against the cached features of the others
// (K forwards under no_grad, the loss once, then K forward+backward passes). logit_scale's
// (and logit_bias's) gradient accumulates K times, as in OpenCLIP, where every pass
// differentiates the full loss w.r.t. it. The loss must take K*B rows.
class Accumulation final : public StepPlan {
 public:
  Accumulation(Clip& model, Loss& loss, int64_t B, int64_t K);
  double forward_backward(std::span<const HostBatch> batches) override;
  bool one_backward_pass() const override { return false; }

 private:
  Clip& model_;
  Loss& loss_;
  int64_t B_, K_;
  ops::FloatArena cache_img_, cache_txt_;  // [K*B, E] features of every micro-batch
  BatchImages images_;
};

// SingleBatch for accum_freq 1, Accumulation otherwise; `loss` takes batch * accum_freq rows.
std::unique_ptr<StepPlan> make_step_plan(Clip& model, Loss& loss, int64_t batch, int64_t accum_freq);

}  // namespace oc
