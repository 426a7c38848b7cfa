#include "core/step_rate.h"

#include <algorithm>

namespace oc {

void StepRate::add(double step_seconds) {
  const double x = std::max(0.0, step_seconds);
  if (warm_up_next_) {
    warm_up_next_ = false;
    warm_up_s_ = x;
    n_last_ = 0;  // a change of speed is judged on this epoch's steps
    return;
  }
  ++counted_;
  std::shift_left(last_.begin(), last_.end(), 1);
  last_.back() = x;
  n_last_ = std::min(n_last_ + 1, kShiftSteps);
  if (n_ < kShiftSteps) {  // the first steps: their (lower) median, so one slow step among them is left out
    ++n_;
    est_ = lower_median(std::min<int>(int(n_), n_last_));
    return;
  }
  if (shifted()) {  // restart at the median of the steps at the new speed
    est_ = lower_median(kShiftSteps), n_ = kShiftSteps;
    return;
  }
  ++n_;
  const double w = 1.0 / double(std::min<int64_t>(n_, kHorizon));
  est_ += w * (std::clamp(x, est_ / kClamp, est_ * kClamp) - est_);
}

double StepRate::lower_median(int k) const {
  std::array<double, kShiftSteps> s = last_;
  std::sort(s.end() - k, s.end());
  return s[size_t(kShiftSteps - k + (k - 1) / 2)];
}

bool StepRate::shifted() const {
  if (n_last_ < kShiftSteps) return false;
  const bool slower = std::all_of(last_.begin(), last_.end(), [&](double x) { return x > est_ * kShiftFactor; });
  const bool faster = std::all_of(last_.begin(), last_.end(), [&](double x) { return x * kShiftFactor < est_; });
  return slower || faster;
}

double StepRate::seconds_per_step() const { return n_ > 0 ? est_ : warm_up_s_; }

double StepRate::eta(int64_t steps_left) const {
  return steps_left > 0 ? seconds_per_step() * double(steps_left) : 0.0;
}

}  // namespace oc
