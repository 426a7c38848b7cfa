// Fault hooks for the crash-recovery and distributed tests, set by environment variables
// (all optional; OPENCLIP_DEBUG_FAULT_RANK limits them to one rank):
//   OPENCLIP_DEBUG_SIGKILL_AT_STEP=N  SIGKILL (nothing flushed or saved) after optimizer step N
//   OPENCLIP_DEBUG_SIGTERM_AT_STEP=N  SIGTERM to ourselves after step N (the real signal path)
//   OPENCLIP_DEBUG_HANG_AT_STEP=N     stop answering after step N (a hung rank)
//   OPENCLIP_DEBUG_NAN_AT_STEP=N      logit_scale becomes NaN before step N (every later step is non-finite)
//   OPENCLIP_DEBUG_RANK_LOSS          every rank prints its own loss per step
#pragma once
#include <cstdint>

namespace oc::ops {
class Backend;
}

namespace oc {

class FaultHooks {
 public:
  static FaultHooks from_env(int rank);
  void before_step(int64_t step, ops::Backend& be, float* logit_scale) const;  // step: the one about to run
  void after_step(int64_t steps_done) const;                 // may not return
  bool print_rank_loss() const { return rank_loss_; }

 private:
  int64_t kill_at_ = -1, term_at_ = -1, hang_at_ = -1, nan_at_ = -1;
  bool rank_loss_ = false;
};

}  // namespace oc
