// Wall-clock timing.
#pragma once
#include <chrono>

namespace oc {

inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

class Timer {
 public:
  Timer() : t0_(now_seconds()) {}
  double seconds() const { return now_seconds() - t0_; }
  void reset() { t0_ = now_seconds(); }

 private:
  double t0_;
};

}  // namespace oc
