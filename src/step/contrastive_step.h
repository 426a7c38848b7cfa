// One process, one batch, OpenCLIP's ClipLoss (or, with ContrastiveLoss::SigLip, its
// SigLipLoss): the training step of code that is not the trainer (bench train, the demo's
// budget probe, the model tests). The trainer composes a Loss and a StepPlan itself
// (train/optimizer_step.cpp); this is that composition for one rank.
#pragma once
#include <cstdint>
#include <memory>

#include "dist/comm.h"
#include "model/clip.h"
#include "step/loss.h"
#include "step/step_plan.h"

namespace oc {

enum class ContrastiveLoss { Clip, SigLip };

class ContrastiveStep {
 public:
  ContrastiveStep(Clip& model, int64_t B_max, ContrastiveLoss kind = ContrastiveLoss::Clip);
  // Returns the loss; parameter gradients are left in model.grads() (zeroed first).
  // images, tokens: host arrays of B <= B_max samples.
  double forward_backward(const float* images, const int32_t* tokens, int64_t B);

 private:
  std::unique_ptr<dist::Communicator> single_;
  std::unique_ptr<Loss> loss_;
  SingleBatch plan_;
};

}  // namespace oc
