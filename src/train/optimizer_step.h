// One optimizer step of a training run: forward, loss and backward over the step's batches
// (several with --accum-freq), the gradient all-reduce across ranks, then the AdamW update,
// skipped when the loss or the gradient is not finite. The loss (contrastive or SigLIP) and
// the plan (one batch or accumulation) are chosen once, when the step is built.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "step/grad_allreduce.h"
#include "step/loss.h"
#include "step/step_plan.h"
#include "train/faults.h"
#include "train/session.h"

namespace oc {

struct StepOutcome {
  double loss = 0;        // this rank's loss (the logged one, as OpenCLIP logs rank 0's)
  double scale = 0;       // exp(logit_scale) of the forward, as OpenCLIP logs it
  bool give_up = false;   // --max-bad-steps non-finite steps in a row
};

class TrainStep {
 public:
  TrainStep(TrainSession& s, const FaultHooks& faults);
  // The step on batches.step(); once its backward is queued it takes the next step's
  // batches ahead (their uploads overlap the rest of this step), and it recycles its own.
  // `signal`: a stop signal this process received (0: none); with several ranks it is
  // agreed at the step's all-reduce (agreed_stop()). Updates st.bad_steps.
  StepOutcome run(StepBatches& batches, int64_t step, double lr, int signal, ResumeState* st);
  int agreed_stop() const { return agreed_stop_; }

 private:
  double all_reduce(double loss, int64_t step, int signal);  // several ranks: agree on loss and stop
  TrainSession& s_;
  const FaultHooks& faults_;
  std::unique_ptr<Loss> loss_;
  std::unique_ptr<StepPlan> plan_;
  std::unique_ptr<GradAllReduce> reducer_;
  int agreed_stop_ = 0;
};

}  // namespace oc
