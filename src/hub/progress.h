// Download progress on stderr: a bar redrawn in place on a TTY (at most 10 times a second),
// otherwise one line when a download starts and one when it ends.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace oc::hub {

class Progress {
 public:
  Progress(std::string name, int64_t total, int64_t have, bool enabled);
  void update(int64_t have);
  void finish(int64_t have);

 private:
  std::string name_;
  int64_t total_, start_have_;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace oc::hub
