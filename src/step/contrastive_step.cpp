#include "step/contrastive_step.h"

namespace oc {

namespace {
std::unique_ptr<Loss> make_loss(ContrastiveLoss kind, Clip& model, dist::Communicator& comm, int64_t B_max) {
  if (kind == ContrastiveLoss::SigLip) return std::make_unique<SigLipLoss>(model, comm, B_max);
  return std::make_unique<ClipLoss>(model, comm, B_max);
}
}  // namespace

ContrastiveStep::ContrastiveStep(Clip& model, int64_t B_max, ContrastiveLoss kind)
    : single_(dist::make_single()), loss_(make_loss(kind, model, *single_, B_max)), plan_(model, *loss_) {}

double ContrastiveStep::forward_backward(const float* images, const int32_t* tokens, int64_t B) {
  const HostBatch batch{images, tokens, B};
  return plan_.forward_backward({&batch, 1});
}

}  // namespace oc
