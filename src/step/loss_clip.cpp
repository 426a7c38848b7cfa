// OpenCLIP's ClipLoss (loss.py, 2.24) over feature rows, for one rank or data parallel.
#include <cmath>

#include "core/check.h"
#include "core/profile.h"
#include "ops/activation.h"
#include "ops/adamw.h"
#include "ops/loss.h"
#include "step/comm_io.h"
#include "step/loss.h"

namespace oc {

ClipLoss::ClipLoss(Clip& model, dist::Communicator& comm, int64_t rows_max, Mode mode)
    : model_(model), comm_(comm), cio_(model.backend(), comm), rows_max_(rows_max), mode_(mode) {
  const std::string what = fmt::format("{} loss buffers, {} rows", model.cfg().name, rows_max);
  for (ops::FloatArena* a :
       {&d_img_, &d_txt_, &d_img_all_, &d_txt_all_, &scratch_, &all_img_, &all_txt_, &own_img_, &own_txt_})
    a->bind(model.backend(), what);
  const int64_t N = comm.size() * rows_max, E = model.cfg().embed_dim;
  for (ops::FloatArena* a : {&d_img_, &d_txt_, &d_img_all_, &d_txt_all_}) a->resize(size_t(N * E));
  scratch_.resize(size_t(2 * N * N));
  if (comm.size() == 1) return;
  for (ops::FloatArena* a : {&all_img_, &all_txt_}) a->resize(size_t(N * E));
  for (ops::FloatArena* a : {&own_img_, &own_txt_}) a->resize(size_t(rows_max * E));
}

LossGrad ClipLoss::evaluate(const float* img, const float* txt, int64_t rows) {
  OC_CHECK(rows <= rows_max_, "{} feature rows exceed the loss's planned {}", rows, rows_max_);
  if (comm_.size() == 1) return one_rank(img, txt, rows);
  return mode_.local_loss ? local(img, txt, rows) : global(img, txt, rows);
}

double ClipLoss::loss_op(const Features& rows, const Features& cols, int64_t label_offset, float* d_scale) {
  return model_.backend().run(ops::ClipLossArgs{
      .dimg = d_img_.data(), .dtxt = d_txt_.data(), .dimg_all = d_img_all_.data(), .dtxt_all = d_txt_all_.data(),
      .dscale_log = {d_scale}, .scratch = scratch_.data(), .img = rows.img, .txt = rows.txt, .img_all = cols.img,
      .txt_all = cols.txt, .scale = std::exp(model_.logit_scale()), .Nl = rows.n, .Na = cols.n,
      .E = model_.cfg().embed_dim, .label_offset = label_offset});
}

LossGrad ClipLoss::one_rank(const float* img, const float* txt, int64_t rows) {
  ops::Backend& be = model_.backend();
  const int64_t E = model_.cfg().embed_dim;
  LossGrad g;
  g.loss = loss_op({img, txt, rows}, {img, txt, rows}, 0, &g.d_scale);
  // One rank: the columns are the rows themselves, so their gradients add.
  be.run(ops::AddInplaceArgs{.y = d_img_.data(), .x = d_img_all_.data(), .n = rows * E});
  be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = d_txt_all_.data(), .n = rows * E});
  g.d_img = d_img_.data(), g.d_txt = d_txt_.data();
  return g;
}

void ClipLoss::gather(const float* img, const float* txt, int64_t rows) {
  OC_PROFILE("step.gather");
  const int64_t E = model_.cfg().embed_dim;
  cio_.allgather(img, all_img_.data(), rows * E);
  cio_.allgather(txt, all_txt_.data(), rows * E);
}

LossGrad ClipLoss::global(const float* img, const float* txt, int64_t rows) {
  ops::Backend& be = model_.backend();
  const int64_t W = comm_.size(), E = model_.cfg().embed_dim, N = W * rows;
  const size_t BE = size_t(rows * E);
  gather(img, txt, rows);
  LossGrad g;
  // Every rank evaluates the same global loss; d_img_ = d loss / d (every gathered row).
  const Features all{all_img_.data(), all_txt_.data(), N};
  g.loss = loss_op(all, all, 0, &g.d_scale);
  be.run(ops::AddInplaceArgs{.y = d_img_.data(), .x = d_img_all_.data(), .n = N * E});
  be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = d_txt_all_.data(), .n = N * E});
  float* gi = own_img_.data();
  float* gt = own_txt_.data();
  if (mode_.gather_with_grad) {
    cio_.reduce_scatter_sum(d_img_.data(), gi, rows * E);
    cio_.reduce_scatter_sum(d_txt_.data(), gt, rows * E);
  } else {
    // OpenCLIP re-inserts the own features into the gathered ones: gradient through the
    // own slice only, which DDP's average turns into 1/world of the global-batch
    // gradient for the towers (logit_scale gets the full one). --global-batch-gradient
    // (ours) scales the slice by world so that the towers get the global batch's.
    const float w = mode_.global_batch_gradient ? float(W) : 1.0f;  // exact: a power of two usually
    be.copy(gi, d_img_.data() + size_t(comm_.rank()) * BE, sizeof(float) * BE);
    be.copy(gt, d_txt_.data() + size_t(comm_.rank()) * BE, sizeof(float) * BE);
    if (w != 1.0f)
      be.run(ops::ScaleInplaceArgs{.x = gi, .n = int64_t(BE), .s = w}),
          be.run(ops::ScaleInplaceArgs{.x = gt, .n = int64_t(BE), .s = w});
  }
  g.d_img = gi, g.d_txt = gt;
  return g;
}

LossGrad ClipLoss::local(const float* img, const float* txt, int64_t rows) {
  ops::Backend& be = model_.backend();
  const int64_t W = comm_.size(), E = model_.cfg().embed_dim;
  const size_t BE = size_t(rows * E);
  gather(img, txt, rows);
  LossGrad g;
  g.loss = loss_op({img, txt, rows}, {all_img_.data(), all_txt_.data(), W * rows}, comm_.rank() * rows, &g.d_scale);
  float* gi = own_img_.data();
  float* gt = own_txt_.data();
  if (mode_.gather_with_grad) {
    cio_.reduce_scatter_sum(d_img_all_.data(), gi, rows * E);
    cio_.reduce_scatter_sum(d_txt_all_.data(), gt, rows * E);
    be.run(ops::AddInplaceArgs{.y = gi, .x = d_img_.data(), .n = rows * E});
    be.run(ops::AddInplaceArgs{.y = gt, .x = d_txt_.data(), .n = rows * E});
  } else {
    // OpenCLIP: the gathered features carry no gradient and the own slice is not
    // re-inserted, so only the row terms (this rank's samples as queries) reach the towers.
    be.copy(gi, d_img_.data(), sizeof(float) * BE);
    be.copy(gt, d_txt_.data(), sizeof(float) * BE);
  }
  g.d_img = gi, g.d_txt = gt;
  return g;
}

}  // namespace oc
