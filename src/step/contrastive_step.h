// One contrastive training step on a single process: zero grads, forward both towers,
// OpenCLIP's ClipLoss, backward. The optimizer step is separate (adamw.h), so the trainer
// can check gradients, clip, skip non-finite steps, and all-reduce in between.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "dist/comm.h"
#include "model/clip.h"

namespace oc {

class ContrastiveStep {
 public:
  ContrastiveStep(Clip& model, int64_t B_max);
  // Returns the loss; parameter gradients are left in model.grads() (zeroed first).
  double forward_backward(const float* images, const int32_t* tokens, int64_t B);
  // OpenCLIP's --accum-freq K: the loss over all K*B samples, gradients through one
  // micro-batch at a time against the cached features of the others (K no-grad forwards,
  // then K forward+backward passes). logit_scale's gradient accumulates K times, as in
  // OpenCLIP, where every pass differentiates the full loss w.r.t. it.
  double forward_backward_accum(const std::vector<const float*>& images, const std::vector<const int32_t*>& tokens,
                                int64_t B);

  // Data parallel (one rank's step of OpenCLIP's ClipLoss with world_size > 1): features of
  // the local B samples, all-gathered into the global batch N = world*B, then
  //  - default: the full [N,N] loss on every rank; gradient through the own slice only, as
  //    OpenCLIP: after DDP's average the towers get 1/world of the single-process gradient
  //    of the N batch and logit_scale the full one. global_batch_gradient (ours) scales
  //    the slice by world, so that the towers get the full gradient too;
  //  - gather_with_grad: the full loss, gradients to every gathered row reduce-scattered
  //    (the backward of an all-gather with autograd): the single-process gradient;
  //  - local_loss: local rows against all columns (labels offset by rank*B); with
  //    gather_with_grad the column gradients are reduce-scattered too (equal to single
  //    process after averaging); without it only the row terms reach the towers (OpenCLIP).
  // Returns this rank's loss (the global one except with local_loss). Parameter gradients
  // are left unreduced in model.grads(): the caller averages them over ranks (buckets).
  struct DistMode {
    bool local_loss = false, gather_with_grad = false, global_batch_gradient = false;
  };
  double forward_backward_dist(const float* images, const int32_t* tokens, int64_t B, dist::Communicator& comm,
                               DistMode mode);
  // --accum-freq K with several ranks, as OpenCLIP with DDP: each rank caches the features of
  // its K micro-batches; the loss is the one above over the gathered K*B rows of every rank
  // (world*K*B samples), its row gradients taken back through one micro-batch at a time.
  double forward_backward_accum_dist(const std::vector<const float*>& images, const std::vector<const int32_t*>& tokens,
                                     int64_t B, dist::Communicator& comm, DistMode mode);

  // SigLIP (--siglip, OpenCLIP's SigLipLoss): the sigmoid loss of the local images against
  // the own texts (positives on the diagonal) and, with several ranks, against every other
  // rank's texts (negative only), received by OpenCLIP's bidirectional neighbour exchange;
  // the gradients of received texts travel back to their owners the same way. Divided by
  // the local batch. Returns this rank's loss; gradients unreduced as above. Needs the
  // model's logit_bias (init_logit_bias).
  double forward_backward_siglip(const float* images, const int32_t* tokens, int64_t B, dist::Communicator& comm);
  // SigLIP with --accum-freq K (OpenCLIP: SigLipLoss over the cached K*B rows of each rank,
  // divided by K*B; logit_scale and logit_bias get K passes' gradients).
  double forward_backward_siglip_accum(const std::vector<const float*>& images,
                                       const std::vector<const int32_t*>& tokens, int64_t B, dist::Communicator& comm);

 private:
  // A loss over feature rows (backend memory): returns it, points *gi/*gt at d loss / d rows
  // and sets the logit_scale / logit_bias gradients.
  using FeatureLoss = std::function<double(const float* img, const float* txt, int64_t rows, const float** gi,
                                           const float** gt, float* d_scale, float* d_bias)>;
  // OpenCLIP's accumulation around `loss`: K cached forwards, the loss over the cache, then a
  // forward and backward per micro-batch with its rows' gradients.
  double accumulate(const std::vector<const float*>& images, const std::vector<const int32_t*>& tokens, int64_t B,
                    const FeatureLoss& loss);
  // SigLIP's loss of this rank's B rows with the neighbour exchange: gradients in d_img_/d_txt_.
  double siglip_loss_grad(const float* img, const float* txt, int64_t B, dist::Communicator& comm, float* d_scale,
                          float* d_bias);
  // The data-parallel loss of this rank's B feature rows (img/txt: backend memory): gathers,
  // evaluates per `mode`, leaves d loss / d (own rows) in own_img_/own_txt_ and returns the loss.
  double dist_loss_grad(const float* img, const float* txt, int64_t B, dist::Communicator& comm, DistMode mode,
                        float* d_scale);
  Clip& model_;
  int64_t B_max_;
  ops::FloatArena d_img_, d_txt_, d_img_all_, d_txt_all_, scratch_, cache_img_, cache_txt_, all_img_, all_txt_, own_img_,
      own_txt_;
  std::vector<ops::FloatArena> sig_blocks_;  // SigLIP: texts in flight and their gradients
};

}  // namespace oc
