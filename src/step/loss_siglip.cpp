// OpenCLIP's SigLipLoss (loss.py, 2.24) with its default bidirectional neighbour exchange.
// Forward, for W ranks, left = r-1 and right = r+1 (mod W):
//   X0L = X0R = own texts
//   hop i < (W-1)/2: send XiL left and XiR right; receive FRi from the right, FLi from the
//     left; loss += block(FRi) + block(FLi) (negative only); X(i+1)L = FRi, X(i+1)R = FLi
//   if W-1 is odd, one more hop: send XkR right, receive FLk from the left, loss += block(FLk)
// Backward is autograd's through those exchanges, hop by hop in reverse: the gradient of a
// received block goes back where it came from and adds to the gradient of what that rank
// sent, which is the block it had received one hop earlier (or its own texts at hop 0).
#include <cmath>

#include "core/check.h"
#include "ops/activation.h"
#include "ops/siglip_loss.h"
#include "step/loss.h"

namespace oc {

namespace {
int bidir_hops(int W) { return (W - 1) / 2; }
int one_way_hops(int W) { return (W - 1) % 2; }
}  // namespace

SigLipLoss::SigLipLoss(Clip& model, dist::Communicator& comm, int64_t rows_max)
    : model_(model), comm_(comm), cio_(model.backend(), comm), rows_max_(rows_max) {
  OC_CHECK(model.p().logit_bias, "SigLIP needs a model with logit_bias (init_logit_bias)");
  const size_t BE = size_t(rows_max * model.cfg().embed_dim);
  const int W = comm.size();
  // Per bidirectional hop FR, FL, d FR, d FL; the one-way hop FL, d FL; two for the way back.
  blocks_.resize(size_t(4 * bidir_hops(W) + 2 * one_way_hops(W) + 2));
  for (ops::FloatArena& b : blocks_) b.bind(model.backend(), fmt::format("SigLIP exchange buffers, {} rows", rows_max));
  d_img_.bind(model.backend(), fmt::format("{} loss buffers, {} rows", model.cfg().name, rows_max));
  d_txt_.bind(model.backend(), fmt::format("{} loss buffers, {} rows", model.cfg().name, rows_max));
  for (ops::FloatArena& b : blocks_) b.resize(BE);
  d_img_.resize(BE), d_txt_.resize(BE);
}

LossGrad SigLipLoss::evaluate(const float* img, const float* txt, int64_t B) {
  OC_CHECK(B <= rows_max_, "{} feature rows exceed the loss's planned {}", B, rows_max_);
  ops::Backend& be = model_.backend();
  const int W = comm_.size(), r = comm_.rank(), left = (r + W - 1) % W, right = (r + 1) % W;
  const int64_t E = model_.cfg().embed_dim, BE = B * E;
  const int bidir = bidir_hops(W), rest = one_way_hops(W);
  auto buf = [&](size_t i) { return blocks_[i].data(); };
  auto FR = [&](int i) { return buf(size_t(4 * i)); };
  auto FL = [&](int i) { return buf(size_t(4 * i + 1)); };
  auto dFR = [&](int i) { return buf(size_t(4 * i + 2)); };
  auto dFL = [&](int i) { return buf(size_t(4 * i + 3)); };
  float* FLk = buf(size_t(4 * bidir));
  float* dFLk = buf(size_t(4 * bidir + 1));
  float* backL = buf(blocks_.size() - 2);  // gradient of what this rank sent left / right at a hop
  float* backR = buf(blocks_.size() - 1);

  LossGrad g;
  const float scale = std::exp(model_.logit_scale()), bias = be.read_scalar(model_.p().logit_bias);
  // The image rows' gradient accumulates over the blocks; each block's text gradient is assigned.
  auto block = [&](const float* texts, float* d_texts, bool positives) {
    return be.run(ops::SiglipLossArgs{.dimg = d_img_.data(), .dtxt = d_texts, .dscale_log = {&g.d_scale},
                                      .dbias = {&g.d_bias}, .img = img, .txt = texts, .scale = scale, .bias = bias,
                                      .B = B, .M = B, .E = E, .positives = positives});
  };
  be.zero(d_img_.data(), sizeof(float) * size_t(BE));
  g.loss = block(txt, d_txt_.data(), true);
  // Forward hops: compute each received block's loss and its gradient at once.
  const float* to_left = txt;
  const float* to_right = txt;
  for (int i = 0; i < bidir; ++i) {
    cio_.sendrecv(to_left, left, FR(i), right, BE);
    cio_.sendrecv(to_right, right, FL(i), left, BE);
    g.loss += block(FR(i), dFR(i), false);
    g.loss += block(FL(i), dFL(i), false);
    to_left = FR(i), to_right = FL(i);
  }
  if (rest) {
    cio_.sendrecv(to_right, right, FLk, left, BE);
    g.loss += block(FLk, dFLk, false);
  }
  // Backward hops, last first. backL/backR: d(what this rank sent left/right at this hop).
  be.zero(backL, sizeof(float) * size_t(BE));
  be.zero(backR, sizeof(float) * size_t(BE));
  if (rest) cio_.sendrecv(dFLk, left, backR, right, BE);  // FLk came from the left
  for (int i = bidir - 1; i >= 0; --i) {
    // What this rank sent at hop i+1 is what it received at hop i: their gradients add.
    be.run(ops::AddInplaceArgs{.y = dFR(i), .x = backL, .n = BE});
    be.run(ops::AddInplaceArgs{.y = dFL(i), .x = backR, .n = BE});
    cio_.sendrecv(dFR(i), right, backL, left, BE);  // FR came from the right
    cio_.sendrecv(dFL(i), left, backR, right, BE);  // FL came from the left
  }
  // Hop 0 sent the own texts both ways.
  be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = backL, .n = BE});
  be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = backR, .n = BE});
  g.d_img = d_img_.data(), g.d_txt = d_txt_.data();
  return g;
}

}  // namespace oc
