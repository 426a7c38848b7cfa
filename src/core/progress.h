// Progress of a long loop (embed, eval, index build, downloads) on stderr. On a terminal: a
// bar redrawn in place at most 5 times a second, "what [#####.....] 1200/5000 images 24%
// 310.2 images/s ETA 12s". Elsewhere (a log file, a pipe): the same text as a plain line at
// most every `log_every_s` seconds, and a last one at finish() when any was written, so short
// runs write nothing extra to logs. The rate and ETA are over the whole run so far (a smoothed
// rate, not the last item's). Not thread-safe: one loop updates it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace oc {

struct ProgressOptions {
  std::FILE* out = stderr;
  int tty = -1;             // -1: isatty(out); 0 or 1 to force the plain lines or the bar
  double log_every_s = 30;  // plain lines: at most one per this many seconds
  double redraw_every_s = 0.2;
  std::function<double()> clock;  // seconds; empty: now_seconds() (tests inject one)
};

class Progress {
 public:
  // unit: what is counted ("images", "texts", "bytes"); total 0 = unknown (no bar, no ETA).
  Progress(std::string what, int64_t total, std::string unit = "items", ProgressOptions opt = {});
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void update(int64_t done);
  void finish();  // the final state (terminal: ends the bar's line); idempotent

  // The status text without the bar: "1200/5000 images 24% 310.2 images/s ETA 12s".
  std::string status(int64_t done, double elapsed_s) const;

 private:
  void draw(int64_t done, double now, bool last);
  std::string what_, unit_;
  int64_t total_, done_ = 0;
  ProgressOptions opt_;
  bool tty_, finished_ = false, wrote_ = false;
  double t0_, last_ = -1e30;
};

// "12s", "3m05s", "1h02m" (seconds rounded).
std::string format_duration(double seconds);

}  // namespace oc
