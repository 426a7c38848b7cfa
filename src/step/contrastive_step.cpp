#include "step/contrastive_step.h"

namespace oc {

ContrastiveStep::ContrastiveStep(Clip& model, int64_t B_max)
    : single_(dist::make_single()), loss_(model, *single_, B_max), plan_(model, loss_) {}

double ContrastiveStep::forward_backward(const float* images, const int32_t* tokens, int64_t B) {
  const HostBatch batch{images, tokens, B};
  return plan_.forward_backward({&batch, 1});
}

}  // namespace oc
