// The time per step of a long loop (training's optimizer steps), for its ETA: a smoothed
// estimate that a one-off slow step (a checkpoint save, a pause of the machine) barely moves
// and that a real change of speed (another job starts or ends) moves within a few steps.
//   - The first step after new_epoch() (and the very first) is a warm-up: it includes the data
//     loader's start, so it is left out; it is the estimate only while nothing else is known.
//   - The first kShiftSteps steps: their lower median (one slow step among them is ignored).
//   - Then a running mean, each step first clamped to [estimate / 3, 3 x estimate] (one 60 s
//     pause among 1 s steps counts as 3 s), which becomes a moving average over
//     the last ~kHorizon steps once there are that many (a slow drift is followed too). A
//     recurring slow step (every 10th step 2x) is within the clamp: a steady mix is estimated
//     by its mean, as the time left is the sum of the steps left.
//   - A change of speed: the last kShiftSteps steps of this epoch all more than kShiftFactor
//     times slower (or all that much faster) than the estimate. The estimate restarts at their
//     median. Two slow steps in a row are still taken as pauses; alternating fast and slow
//     steps never look like a change (the last three always hold both).
// Not thread-safe: the training loop's thread updates and reads it.
#pragma once
#include <array>
#include <cstdint>

namespace oc {

class StepRate {
 public:
  static constexpr double kClamp = 3;          // a step counts as at most 3x (at least 1/3 of) the estimate
  static constexpr int kHorizon = 100;         // the moving average's span, in steps
  static constexpr int kShiftSteps = 3;        // this many steps in a row ...
  static constexpr double kShiftFactor = 1.5;  // ... this far from the estimate are a change of speed

  // The next step is a warm-up (left out): call at the start of each epoch, and after a resume.
  void new_epoch() { warm_up_next_ = true; }
  void add(double step_seconds);
  // Seconds per step: the estimate, the warm-up's time while nothing else is known, 0 before any step.
  double seconds_per_step() const;
  // Seconds for `steps_left` more steps (0 when none are left).
  double eta(int64_t steps_left) const;
  int64_t steps_counted() const { return counted_; }  // steps in the estimate (warm-ups left out)

 private:
  bool shifted() const;              // the last kShiftSteps steps show a change of speed
  double lower_median(int k) const;  // of the last k (1..kShiftSteps) steps
  double est_ = 0;                   // seconds per step; valid when n_ > 0
  int64_t n_ = 0;                    // steps in the mean since the last change of speed
  int64_t counted_ = 0;
  double warm_up_s_ = 0;
  bool warm_up_next_ = true;
  std::array<double, kShiftSteps> last_{};  // the last steps' raw times, oldest first
  int n_last_ = 0;
};

}  // namespace oc
