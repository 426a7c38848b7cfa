#include "optim/schedule.h"

#include <cmath>

#include "core/check.h"

namespace oc {

LrSchedule parse_lr_schedule(const std::string& name) {
  if (name == "cosine") return LrSchedule::Cosine;
  if (name == "const") return LrSchedule::Const;
  if (name == "const-cooldown") return LrSchedule::ConstCooldown;
  OC_USER_ERROR("--lr-scheduler {}: unknown; choose cosine, const or const-cooldown", name);
}

double lr_at(const ScheduleCfg& s, int64_t step) {
  if (step < s.warmup) return s.base_lr * double(step + 1) / double(s.warmup);
  switch (s.kind) {
    case LrSchedule::Cosine: {
      const double e = double(step - s.warmup), es = double(s.total_steps - s.warmup);
      return 0.5 * (1.0 + std::cos(M_PI * e / es)) * s.base_lr;
    }
    case LrSchedule::Const:
      return s.base_lr;
    case LrSchedule::ConstCooldown: {
      const int64_t start = s.total_steps - s.cooldown_steps;
      if (step < start) return s.base_lr;
      const double e = double(step - start), es = double(s.total_steps - start);
      const double decay = std::pow(1.0 - e / es, s.cooldown_power);
      return decay * (s.base_lr - s.cooldown_end) + s.cooldown_end;
    }
  }
  return s.base_lr;
}

}  // namespace oc
