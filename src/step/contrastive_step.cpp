#include "step/contrastive_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/profile.h"
#include "ops/activation.h"
#include "ops/loss.h"
#include "step/comm_io.h"

namespace oc {

ContrastiveStep::ContrastiveStep(Clip& model, int64_t B_max) : model_(model), B_max_(B_max) {
  const std::string what = fmt::format("{} loss buffers, batch {}", model.cfg().name, B_max);
  for (ops::FloatArena* a : {&d_img_, &d_txt_, &d_img_all_, &d_txt_all_, &scratch_, &cache_img_, &cache_txt_, &all_img_,
                             &all_txt_, &own_img_, &own_txt_})
    a->bind(model.backend(), what);
  const size_t BE = size_t(B_max * model.cfg().embed_dim);
  d_img_.resize(BE), d_txt_.resize(BE), d_img_all_.resize(BE), d_txt_all_.resize(BE);
  scratch_.resize(size_t(2 * B_max * B_max));
}

double ContrastiveStep::forward_backward(const float* images, const int32_t* tokens, int64_t B) {
  ops::Backend& be = model_.backend();
  OC_CHECK(B <= B_max_, "batch {} exceeds the planned {}", B, B_max_);
  const int64_t E = model_.cfg().embed_dim;
  model_.zero_grads();
  Clip::Features f;
  { OC_PROFILE("step.forward"); f = model_.forward(images, tokens, B); }
  OC_PROFILE("step.loss+backward");
  const float scale = std::exp(model_.logit_scale());
  float d_scale = 0;
  const double loss = be.run(ops::ClipLossArgs{.dimg = d_img_.data(), .dtxt = d_txt_.data(),
                                               .dimg_all = d_img_all_.data(), .dtxt_all = d_txt_all_.data(),
                                               .dscale_log = {&d_scale}, .scratch = scratch_.data(), .img = f.image,
                                               .txt = f.text, .img_all = f.image, .txt_all = f.text, .scale = scale,
                                               .Nl = B, .Na = B, .E = E, .label_offset = 0});
  // Single process: the gathered columns are the local features themselves.
  be.run(ops::AddInplaceArgs{.y = d_img_.data(), .x = d_img_all_.data(), .n = B * E});
  be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = d_txt_all_.data(), .n = B * E});
  ops::add_scalar(be, model_.g().logit_scale, d_scale);
  model_.backward(d_img_.data(), d_txt_.data());
  return loss;
}

}  // namespace oc

namespace oc {

double ContrastiveStep::forward_backward_accum(const std::vector<const float*>& images,
                                               const std::vector<const int32_t*>& tokens, int64_t B) {
  ops::Backend& be = model_.backend();
  const int64_t K = int64_t(images.size()), N = K * B, E = model_.cfg().embed_dim;
  OC_CHECK(K >= 1 && tokens.size() == images.size(), "accumulation needs matching image/token micro-batches");
  OC_CHECK(B <= B_max_, "micro-batch {} exceeds the planned {}", B, B_max_);
  if (cache_img_.size() < size_t(N * E)) {
    cache_img_.resize(size_t(N * E)), cache_txt_.resize(size_t(N * E));
    d_img_.resize(size_t(N * E)), d_txt_.resize(size_t(N * E));
    d_img_all_.resize(size_t(N * E)), d_txt_all_.resize(size_t(N * E));
    scratch_.resize(size_t(2 * N * N));
  }
  // 1. Features of every micro-batch (OpenCLIP: under no_grad).
  for (int64_t j = 0; j < K; ++j) {
    OC_PROFILE("step.forward");
    Clip::Features f = model_.forward(images[size_t(j)], tokens[size_t(j)], B);
    be.copy(cache_img_.data() + j * B * E, f.image, sizeof(float) * size_t(B * E));
    be.copy(cache_txt_.data() + j * B * E, f.text, sizeof(float) * size_t(B * E));
  }
  // 2. The loss over all N samples and its gradient w.r.t. every feature row. Re-running
  // micro-batch j reproduces its cached features bit for bit (deterministic kernels), so
  // OpenCLIP's K loss evaluations are this one, restricted to the rows of slot j.
  const float scale = std::exp(model_.logit_scale());
  float d_scale = 0;
  const double loss = be.run(ops::ClipLossArgs{.dimg = d_img_.data(), .dtxt = d_txt_.data(),
                                               .dimg_all = d_img_all_.data(), .dtxt_all = d_txt_all_.data(),
                                               .dscale_log = {&d_scale}, .scratch = scratch_.data(),
                                               .img = cache_img_.data(), .txt = cache_txt_.data(),
                                               .img_all = cache_img_.data(), .txt_all = cache_txt_.data(),
                                               .scale = scale, .Nl = N, .Na = N, .E = E, .label_offset = 0});
  be.run(ops::AddInplaceArgs{.y = d_img_.data(), .x = d_img_all_.data(), .n = N * E});
  be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = d_txt_all_.data(), .n = N * E});
  // 3. Backward through each micro-batch.
  model_.zero_grads();
  for (int64_t j = 0; j < K; ++j) {
    { OC_PROFILE("step.forward"); model_.forward(images[size_t(j)], tokens[size_t(j)], B); }
    OC_PROFILE("step.loss+backward");
    model_.backward(d_img_.data() + j * B * E, d_txt_.data() + j * B * E);
  }
  ops::add_scalar(be, model_.g().logit_scale, float(K) * d_scale);
  return loss;
}

}  // namespace oc

namespace oc {

double ContrastiveStep::forward_backward_dist(const float* images, const int32_t* tokens, int64_t B,
                                              dist::Communicator& comm, DistMode mode) {
  OC_CHECK(B <= B_max_, "batch {} exceeds the planned {}", B, B_max_);
  model_.zero_grads();
  Clip::Features f;
  { OC_PROFILE("step.forward"); f = model_.forward(images, tokens, B); }
  float d_scale = 0;
  const double loss = dist_loss_grad(f.image, f.text, B, comm, mode, &d_scale);
  OC_PROFILE("step.loss+backward");
  ops::add_scalar(model_.backend(), model_.g().logit_scale, d_scale);
  model_.backward(own_img_.data(), own_txt_.data());
  return loss;
}

double ContrastiveStep::accumulate(const std::vector<const float*>& images, const std::vector<const int32_t*>& tokens,
                                   int64_t B, const FeatureLoss& feature_loss) {
  ops::Backend& be = model_.backend();
  const int64_t K = int64_t(images.size()), KB = K * B, E = model_.cfg().embed_dim;
  OC_CHECK(K >= 1 && tokens.size() == images.size(), "accumulation needs matching image/token micro-batches");
  OC_CHECK(B <= B_max_, "micro-batch {} exceeds the planned {}", B, B_max_);
  if (cache_img_.size() < size_t(KB * E)) cache_img_.resize(size_t(KB * E)), cache_txt_.resize(size_t(KB * E));
  // 1. This rank's feature cache (OpenCLIP: accum_features, under no_grad).
  for (int64_t j = 0; j < K; ++j) {
    OC_PROFILE("step.forward");
    Clip::Features f = model_.forward(images[size_t(j)], tokens[size_t(j)], B);
    be.copy(cache_img_.data() + j * B * E, f.image, sizeof(float) * size_t(B * E));
    be.copy(cache_txt_.data() + j * B * E, f.text, sizeof(float) * size_t(B * E));
  }
  // 2. OpenCLIP's pass j evaluates the loss over the cache with slot j live (equal bit for
  // bit); with several ranks the loss gathers (or exchanges) every rank's K*B rows. Its
  // gradient reaches slot j's rows: the K passes are one evaluation split by slot.
  const float* gi = nullptr;
  const float* gt = nullptr;
  float d_scale = 0, d_bias = 0;
  const double loss = feature_loss(cache_img_.data(), cache_txt_.data(), KB, &gi, &gt, &d_scale, &d_bias);
  // 3. Backward through each micro-batch; logit_scale's (and logit_bias's) gradient once per pass.
  model_.zero_grads();
  for (int64_t j = 0; j < K; ++j) {
    { OC_PROFILE("step.forward"); model_.forward(images[size_t(j)], tokens[size_t(j)], B); }
    OC_PROFILE("step.loss+backward");
    model_.backward(gi + j * B * E, gt + j * B * E);
  }
  ops::add_scalar(be, model_.g().logit_scale, float(K) * d_scale);
  if (model_.p().logit_bias) ops::add_scalar(be, model_.g().logit_bias, float(K) * d_bias);
  return loss;
}

double ContrastiveStep::forward_backward_accum_dist(const std::vector<const float*>& images,
                                                    const std::vector<const int32_t*>& tokens, int64_t B,
                                                    dist::Communicator& comm, DistMode mode) {
  return accumulate(images, tokens, B,
                    [&](const float* img, const float* txt, int64_t rows, const float** gi, const float** gt,
                        float* d_scale, float*) {
                      const double loss = dist_loss_grad(img, txt, rows, comm, mode, d_scale);
                      *gi = own_img_.data(), *gt = own_txt_.data();
                      return loss;
                    });
}

double ContrastiveStep::dist_loss_grad(const float* img, const float* txt, int64_t B, dist::Communicator& comm,
                                       DistMode mode, float* d_scale) {
  ops::Backend& be = model_.backend();
  const int64_t W = comm.size(), r = comm.rank(), N = W * B, E = model_.cfg().embed_dim;
  const size_t NE = size_t(N * E), BE = size_t(B * E);
  if (all_img_.size() < NE) {
    all_img_.resize(NE), all_txt_.resize(NE);
    d_img_.resize(NE), d_txt_.resize(NE), d_img_all_.resize(NE), d_txt_all_.resize(NE);
    scratch_.resize(size_t(2 * N * N));
  }
  if (own_img_.size() < BE) own_img_.resize(BE), own_txt_.resize(BE);
  CommIO cio(be, comm);
  {
    OC_PROFILE("step.gather");
    cio.allgather(img, all_img_.data(), B * E);
    cio.allgather(txt, all_txt_.data(), B * E);
  }
  OC_PROFILE("step.loss+backward");
  const float scale = std::exp(model_.logit_scale());
  double loss;
  float* gi = own_img_.data();
  float* gt = own_txt_.data();
  if (!mode.local_loss) {
    // Every rank evaluates the same global loss; d_img_ = d loss / d (every gathered row).
    loss = be.run(ops::ClipLossArgs{.dimg = d_img_.data(), .dtxt = d_txt_.data(), .dimg_all = d_img_all_.data(),
                                    .dtxt_all = d_txt_all_.data(), .dscale_log = {d_scale}, .scratch = scratch_.data(),
                                    .img = all_img_.data(), .txt = all_txt_.data(), .img_all = all_img_.data(),
                                    .txt_all = all_txt_.data(), .scale = scale, .Nl = N, .Na = N, .E = E,
                                    .label_offset = 0});
    be.run(ops::AddInplaceArgs{.y = d_img_.data(), .x = d_img_all_.data(), .n = N * E});
    be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = d_txt_all_.data(), .n = N * E});
    if (mode.gather_with_grad) {
      cio.reduce_scatter_sum(d_img_.data(), gi, B * E);
      cio.reduce_scatter_sum(d_txt_.data(), gt, B * E);
    } else {
      // OpenCLIP re-inserts the own features into the gathered ones: gradient through the
      // own slice only, which DDP's average turns into 1/world of the global-batch
      // gradient for the towers (logit_scale gets the full one). --global-batch-gradient
      // (ours) scales the slice by world so that the towers get the global batch's.
      const float w = mode.global_batch_gradient ? float(W) : 1.0f;  // exact: a power of two usually
      const float* si = d_img_.data() + size_t(r) * BE;
      const float* st = d_txt_.data() + size_t(r) * BE;
      be.copy(gi, si, sizeof(float) * BE);
      be.copy(gt, st, sizeof(float) * BE);
      if (w != 1.0f)
        be.run(ops::ScaleInplaceArgs{.x = gi, .n = int64_t(BE), .s = w}),
            be.run(ops::ScaleInplaceArgs{.x = gt, .n = int64_t(BE), .s = w});
    }
  } else {
    loss = be.run(ops::ClipLossArgs{.dimg = d_img_.data(), .dtxt = d_txt_.data(), .dimg_all = d_img_all_.data(),
                                    .dtxt_all = d_txt_all_.data(), .dscale_log = {d_scale}, .scratch = scratch_.data(),
                                    .img = img, .txt = txt, .img_all = all_img_.data(), .txt_all = all_txt_.data(),
                                    .scale = scale, .Nl = B, .Na = N, .E = E, .label_offset = r * B});
    if (mode.gather_with_grad) {
      cio.reduce_scatter_sum(d_img_all_.data(), gi, B * E);
      cio.reduce_scatter_sum(d_txt_all_.data(), gt, B * E);
      be.run(ops::AddInplaceArgs{.y = gi, .x = d_img_.data(), .n = B * E});
      be.run(ops::AddInplaceArgs{.y = gt, .x = d_txt_.data(), .n = B * E});
    } else {
      // OpenCLIP: the gathered features carry no gradient and the own slice is not
      // re-inserted, so only the row terms (this rank's samples as queries) reach the towers.
      be.copy(gi, d_img_.data(), sizeof(float) * BE);
      be.copy(gt, d_txt_.data(), sizeof(float) * BE);
    }
  }
  return loss;
}

}  // namespace oc
