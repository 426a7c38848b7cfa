// SigLIP's training step (OpenCLIP 2.24 loss.py SigLipLoss with its default bidirectional
// neighbour exchange). Forward, for W ranks, left = r-1 and right = r+1 (mod W):
//   X0L = X0R = own texts
//   hop i < (W-1)/2: send XiL left and XiR right; receive FRi from the right, FLi from the
//     left; loss += block(FRi) + block(FLi) (negative only); X(i+1)L = FRi, X(i+1)R = FLi
//   if W-1 is odd, one more hop: send XkR right, receive FLk from the left, loss += block(FLk)
// Backward is autograd's through those exchanges, hop by hop in reverse: the gradient of a
// received block goes back where it came from and adds to the gradient of what that rank
// sent, which is the block it had received one hop earlier (or its own texts at hop 0).
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/profile.h"
#include "ops/activation.h"
#include "ops/siglip_loss.h"
#include "step/comm_io.h"
#include "step/contrastive_step.h"

namespace oc {

double ContrastiveStep::forward_backward_siglip(const float* images, const int32_t* tokens, int64_t B,
                                                dist::Communicator& comm) {
  OC_CHECK(B <= B_max_, "batch {} exceeds the planned {}", B, B_max_);
  OC_CHECK(model_.p().logit_bias, "SigLIP needs a model with logit_bias (init_logit_bias)");
  model_.zero_grads();
  Clip::Features f;
  { OC_PROFILE("step.forward"); f = model_.forward(images, tokens, B); }
  float d_scale = 0, d_bias = 0;
  const double loss = siglip_loss_grad(f.image, f.text, B, comm, &d_scale, &d_bias);
  ops::Backend& be = model_.backend();
  ops::add_scalar(be, model_.g().logit_scale, d_scale);
  ops::add_scalar(be, model_.g().logit_bias, d_bias);
  model_.backward(d_img_.data(), d_txt_.data());
  return loss;
}

double ContrastiveStep::forward_backward_siglip_accum(const std::vector<const float*>& images,
                                                      const std::vector<const int32_t*>& tokens, int64_t B,
                                                      dist::Communicator& comm) {
  OC_CHECK(model_.p().logit_bias, "SigLIP needs a model with logit_bias (init_logit_bias)");
  return accumulate(images, tokens, B,
                    [&](const float* img, const float* txt, int64_t rows, const float** gi, const float** gt,
                        float* d_scale, float* d_bias) {
                      const double loss = siglip_loss_grad(img, txt, rows, comm, d_scale, d_bias);
                      *gi = d_img_.data(), *gt = d_txt_.data();
                      return loss;
                    });
}

double ContrastiveStep::siglip_loss_grad(const float* img, const float* txt, int64_t B, dist::Communicator& comm,
                                         float* d_scale_out, float* d_bias_out) {
  ops::Backend& be = model_.backend();
  const int W = comm.size(), r = comm.rank(), left = (r + W - 1) % W, right = (r + 1) % W;
  const int64_t E = model_.cfg().embed_dim;
  const size_t BE = size_t(B * E);
  const int bidir = (W - 1) / 2, rest = (W - 1) % 2;
  // Buffers: per bidir hop FR, FL, d FR, d FL; the last hop FL, d FL; two for the way back.
  const size_t nbuf = size_t(4 * bidir + 2 * rest + 2);
  if (sig_blocks_.size() < nbuf) sig_blocks_.resize(nbuf);
  for (auto& b : sig_blocks_)
    if (b.size() < BE) b.bind(be, fmt::format("SigLIP exchange buffers, batch {}", B)), b.resize(BE);
  if (d_img_.size() < BE) d_img_.resize(BE), d_txt_.resize(BE);
  auto buf = [&](size_t i) { return sig_blocks_[i].data(); };
  auto FR = [&](int i) { return buf(size_t(4 * i)); };
  auto FL = [&](int i) { return buf(size_t(4 * i + 1)); };
  auto dFR = [&](int i) { return buf(size_t(4 * i + 2)); };
  auto dFL = [&](int i) { return buf(size_t(4 * i + 3)); };
  float* FLk = buf(size_t(4 * bidir));
  float* dFLk = buf(size_t(4 * bidir + 1));
  float* backL = buf(nbuf - 2);  // gradient of what this rank sent left / right at a hop
  float* backR = buf(nbuf - 1);

  CommIO cio(be, comm);
  struct {
    const float *image, *text;
  } f{img, txt};
  OC_PROFILE("step.loss+backward");
  const float scale = std::exp(model_.logit_scale()), bias = be.read_scalar(model_.p().logit_bias);
  float d_scale = 0, d_bias = 0;
  be.zero(d_img_.data(), sizeof(float) * BE);
  double loss = be.run(ops::SiglipLossArgs{.dimg = d_img_.data(), .dtxt = d_txt_.data(), .dscale_log = {&d_scale},
                                           .dbias = {&d_bias}, .img = f.image, .txt = f.text, .scale = scale,
                                           .bias = bias, .B = B, .M = B, .E = E, .positives = true});
  // Forward hops: compute each received block's loss and its gradient at once.
  const float* to_left = f.text;
  const float* to_right = f.text;
  for (int i = 0; i < bidir; ++i) {
    cio.sendrecv(to_left, left, FR(i), right, int64_t(BE));
    cio.sendrecv(to_right, right, FL(i), left, int64_t(BE));
    loss += be.run(ops::SiglipLossArgs{.dimg = d_img_.data(), .dtxt = dFR(i), .dscale_log = {&d_scale},
                                       .dbias = {&d_bias}, .img = f.image, .txt = FR(i), .scale = scale, .bias = bias,
                                       .B = B, .M = B, .E = E, .positives = false});
    loss += be.run(ops::SiglipLossArgs{.dimg = d_img_.data(), .dtxt = dFL(i), .dscale_log = {&d_scale},
                                       .dbias = {&d_bias}, .img = f.image, .txt = FL(i), .scale = scale, .bias = bias,
                                       .B = B, .M = B, .E = E, .positives = false});
    to_left = FR(i), to_right = FL(i);
  }
  if (rest) {
    cio.sendrecv(to_right, right, FLk, left, int64_t(BE));
    loss += be.run(ops::SiglipLossArgs{.dimg = d_img_.data(), .dtxt = dFLk, .dscale_log = {&d_scale},
                                       .dbias = {&d_bias}, .img = f.image, .txt = FLk, .scale = scale, .bias = bias,
                                       .B = B, .M = B, .E = E, .positives = false});
  }
  // Backward hops, last first. backL/backR: d(what this rank sent left/right at this hop).
  be.zero(backL, sizeof(float) * BE);
  be.zero(backR, sizeof(float) * BE);
  if (rest) cio.sendrecv(dFLk, left, backR, right, int64_t(BE));  // FLk came from the left
  for (int i = bidir - 1; i >= 0; --i) {
    // What this rank sent at hop i+1 is what it received at hop i: their gradients add.
    be.run(ops::AddInplaceArgs{.y = dFR(i), .x = backL, .n = int64_t(BE)});
    be.run(ops::AddInplaceArgs{.y = dFL(i), .x = backR, .n = int64_t(BE)});
    cio.sendrecv(dFR(i), right, backL, left, int64_t(BE));  // FR came from the right
    cio.sendrecv(dFL(i), left, backR, right, int64_t(BE));  // FL came from the left
  }
  be.run(
      ops::AddInplaceArgs{.y = d_txt_.data(), .x = backL, .n = int64_t(B * E)});  // hop 0 sent the own texts both ways
  be.run(ops::AddInplaceArgs{.y = d_txt_.data(), .x = backR, .n = int64_t(B * E)});
  *d_scale_out = d_scale, *d_bias_out = d_bias;
  return loss;
}

}  // namespace oc
