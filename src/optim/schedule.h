// Learning-rate schedules exactly as OpenCLIP's scheduler.py computes them, per optimizer
// step (0-based): linear warmup base*(step+1)/warmup, then cosine / const / const-cooldown.
#pragma once
#include <cstdint>
#include <string>

namespace oc {

enum class LrSchedule { Cosine, Const, ConstCooldown };

LrSchedule parse_lr_schedule(const std::string& name);  // cosine, const, const-cooldown

struct ScheduleCfg {
  LrSchedule kind = LrSchedule::Cosine;
  double base_lr = 5e-4;
  int64_t warmup = 10000;
  int64_t total_steps = 0;     // (num_batches // accum_freq) * epochs
  int64_t cooldown_steps = 0;  // (num_batches // accum_freq) * epochs_cooldown
  double cooldown_end = 0.0;   // --lr-cooldown-end
  double cooldown_power = 1.0; // --lr-cooldown-power
};

double lr_at(const ScheduleCfg& s, int64_t step);

}  // namespace oc
