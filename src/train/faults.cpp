#include "train/faults.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "ops/backend.h"

namespace oc {

FaultHooks FaultHooks::from_env(int rank) {
  FaultHooks h;
  const char* fault_rank = std::getenv("OPENCLIP_DEBUG_FAULT_RANK");
  const bool here = !fault_rank || std::atoi(fault_rank) == rank;
  auto at = [&](const char* name) -> int64_t {
    const char* v = std::getenv(name);
    return v && here ? std::atoll(v) : -1;
  };
  h.kill_at_ = at("OPENCLIP_DEBUG_SIGKILL_AT_STEP");
  h.term_at_ = at("OPENCLIP_DEBUG_SIGTERM_AT_STEP");
  h.hang_at_ = at("OPENCLIP_DEBUG_HANG_AT_STEP");
  h.nan_at_ = at("OPENCLIP_DEBUG_NAN_AT_STEP");
  h.rank_loss_ = std::getenv("OPENCLIP_DEBUG_RANK_LOSS") != nullptr;
  return h;
}

void FaultHooks::before_step(int64_t step, ops::Backend& be, float* logit_scale) const {
  if (step == nan_at_) be.write_scalar(logit_scale, NAN);
}

void FaultHooks::after_step(int64_t steps_done) const {
  if (steps_done == kill_at_) std::raise(SIGKILL);
  if (steps_done == term_at_) std::raise(SIGTERM);
  if (steps_done == hang_at_)
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace oc
