// The training log of one epoch, as OpenCLIP's train_one_epoch writes it: a text line every
// --log-every-n-steps steps (and at the epoch's last), TensorBoard train/* scalars at the same
// steps, and a progress bar on the terminal after every step.
#pragma once
#include <cstdint>

#include "core/timer.h"
#include "train/session.h"

namespace oc {

struct StepTimes {
  double data = 0, batch = 0;  // seconds waiting for data, seconds for the whole step
};

class StepLogger {
 public:
  // The epoch's first step is a warm-up for the ETA (TrainSession::step_rate).
  StepLogger(TrainSession& s, int64_t epoch) : s_(s), epoch_(epoch) { s_.step_rate.new_epoch(); }
  // After the optimizer step `step` (the i_accum-th of the epoch), batch_i batches done.
  void log(int64_t step, int64_t i_accum, int64_t batch_i, double lr, double loss, double scale, const StepTimes& t);

 private:
  struct Meter {
    double sum = 0;
    long n = 0;
    void add(double v) { sum += v, ++n; }
    double avg() const { return n ? sum / double(n) : 0; }
  };
  void line(int64_t step, int64_t i_accum, int64_t batch_i, double lr, double loss, double scale, const StepTimes& t);
  void progress(int64_t step, int64_t i_accum, int64_t batch_i, double loss, const StepTimes& t) const;
  int64_t steps_left(int64_t step) const;  // to the end of the run (or of replan's plan)
  TrainSession& s_;
  int64_t epoch_;
  Meter loss_, data_, batch_;
};

}  // namespace oc
