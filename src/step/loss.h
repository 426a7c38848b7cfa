// The training losses over feature rows: OpenCLIP's ClipLoss (loss_clip.cpp) and SigLipLoss
// (loss_siglip.cpp), each for one rank or several (the communicator decides: with one rank it
// is the single-process one). A loss owns the buffers it needs; the step plan (step_plan.h)
// runs the towers around it, once or per accumulated micro-batch.
#pragma once
#include <cstdint>
#include <vector>

#include "dist/comm.h"
#include "model/clip.h"
#include "step/comm_io.h"

namespace oc {

// One evaluation: the loss and its gradients w.r.t. this rank's feature rows (backend memory
// of the loss, valid until its next evaluation) and the model's logit_scale / logit_bias.
struct LossGrad {
  double loss = 0;  // this rank's (the global one where every rank evaluates the same)
  const float* d_img = nullptr;
  const float* d_txt = nullptr;
  float d_scale = 0, d_bias = 0;
};

class Loss {
 public:
  virtual ~Loss() = default;
  // img, txt: this rank's [rows, E] normalized features, backend memory; rows <= the rows the
  // loss was built for. The temperature (and bias) are the model's current ones.
  virtual LossGrad evaluate(const float* img, const float* txt, int64_t rows) = 0;
  // Whether d_bias is a gradient of the model's logit_bias (SigLIP) or always 0.
  virtual bool learns_bias() const = 0;
};

// OpenCLIP's ClipLoss. One rank: the [rows, rows] loss, gradients to both sides. Several
// ranks (data parallel): the features of every rank, all-gathered into N = world*rows, then
//  - default: the full [N,N] loss on every rank; gradient through the own slice only, as
//    OpenCLIP: after DDP's average the towers get 1/world of the single-process gradient
//    of the N batch and logit_scale the full one. global_batch_gradient (ours) scales
//    the slice by world, so that the towers get the full gradient too;
//  - gather_with_grad: the full loss, gradients to every gathered row reduce-scattered
//    (the backward of an all-gather with autograd): the single-process gradient;
//  - local_loss: local rows against all columns (labels offset by rank*rows); with
//    gather_with_grad the column gradients are reduce-scattered too (equal to single
//    process after averaging); without it only the row terms reach the towers (OpenCLIP).
// The loss is the global one except with local_loss. The modes do nothing with one rank
// (OpenCLIP's ClipLoss ignores them when world_size is 1).
struct ClipLossMode {
  bool local_loss = false, gather_with_grad = false, global_batch_gradient = false;
};
class ClipLoss final : public Loss {
 public:
  using Mode = ClipLossMode;
  ClipLoss(Clip& model, dist::Communicator& comm, int64_t rows_max, Mode mode = {});
  LossGrad evaluate(const float* img, const float* txt, int64_t rows) override;
  bool learns_bias() const override { return false; }

 private:
  struct Features {
    const float *img, *txt;
    int64_t n;
  };
  // The loss op of `rows` against `cols` into d_img_ (rows) and d_img_all_ (columns).
  double loss_op(const Features& rows, const Features& cols, int64_t label_offset, float* d_scale);
  LossGrad one_rank(const float* img, const float* txt, int64_t rows);
  LossGrad global(const float* img, const float* txt, int64_t rows);  // not local_loss
  LossGrad local(const float* img, const float* txt, int64_t rows);   // local_loss
  void gather(const float* img, const float* txt, int64_t rows);
  Clip& model_;
  dist::Communicator& comm_;
  CommIO cio_;
  int64_t rows_max_;
  Mode mode_;
  // d loss / d (rows) and d loss / d (columns) of the loss op, its scratch; with several
  // ranks the gathered features and the gradient of the own rows.
  ops::FloatArena d_img_, d_txt_, d_img_all_, d_txt_all_, scratch_, all_img_, all_txt_, own_img_, own_txt_;
};

// OpenCLIP's SigLipLoss with its default bidirectional neighbour exchange (loss_siglip.cpp):
// the sigmoid loss of the local images against the own texts (positives on the diagonal)
// and, with several ranks, against every other rank's texts (negative only); the gradients
// of received texts travel back to their owners the same way. Divided by the local rows.
// Needs the model's logit_bias (init_logit_bias).
class SigLipLoss final : public Loss {
 public:
  SigLipLoss(Clip& model, dist::Communicator& comm, int64_t rows_max);
  LossGrad evaluate(const float* img, const float* txt, int64_t rows) override;
  bool learns_bias() const override { return true; }

 private:
  Clip& model_;
  dist::Communicator& comm_;
  CommIO cio_;
  int64_t rows_max_;
  ops::FloatArena d_img_, d_txt_;
  std::vector<ops::FloatArena> blocks_;  // texts in flight and their gradients
};

}  // namespace oc
