#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "core/timer.h"

namespace oc {

std::string format_duration(double seconds) {
  const int64_t s = std::max<int64_t>(0, std::llround(seconds));
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", (long long)s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
  return buf;
}

Progress::Progress(std::string what, int64_t total, std::string unit, ProgressOptions opt)
    : what_(std::move(what)), unit_(std::move(unit)), total_(std::max<int64_t>(0, total)), opt_(std::move(opt)) {
  if (!opt_.clock) opt_.clock = now_seconds;
  tty_ = opt_.tty < 0 ? ::isatty(::fileno(opt_.out)) != 0 : opt_.tty != 0;
  t0_ = opt_.clock();
}

Progress::~Progress() { finish(); }

std::string Progress::status(int64_t done, double elapsed_s) const {
  std::string s = std::to_string(done);
  if (total_ > 0) s += "/" + std::to_string(total_);
  s += " " + unit_;
  char buf[96];
  if (total_ > 0) {
    std::snprintf(buf, sizeof buf, " %d%%", int(100 * std::min(done, total_) / total_));
    s += buf;
  }
  const double rate = elapsed_s > 0 ? double(done) / elapsed_s : 0;
  if (done > 0 && elapsed_s > 0) {
    std::snprintf(buf, sizeof buf, " %.1f %s/s", rate, unit_.c_str());
    s += buf;
  }
  if (total_ > 0 && rate > 0 && done < total_) s += " ETA " + format_duration(double(total_ - done) / rate);
  return s;
}

void Progress::draw(int64_t done, double now, bool last) {
  const std::string text = status(done, now - t0_);
  if (tty_) {
    std::string bar;
    if (total_ > 0) {
      const int w = 30, fill = int(w * std::min(done, total_) / total_);
      bar = " [" + std::string(size_t(fill), '#') + std::string(size_t(w - fill), '.') + "]";
    }
    std::fprintf(opt_.out, "\r%s%s %s\033[K%s", what_.c_str(), bar.c_str(), text.c_str(), last ? "\n" : "");
  } else {
    std::fprintf(opt_.out, "%s: %s%s\n", what_.c_str(), text.c_str(), last ? " (done)" : "");
  }
  std::fflush(opt_.out);
  wrote_ = true;
}

void Progress::update(int64_t done) {
  if (finished_) return;
  done_ = done;
  const double now = opt_.clock();
  if (now - last_ < (tty_ ? opt_.redraw_every_s : opt_.log_every_s)) return;
  if (!tty_ && now - t0_ < opt_.log_every_s) return;  // a short run writes no plain lines
  last_ = now;
  draw(done, now, false);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (wrote_) draw(done_, opt_.clock(), true);
}

}  // namespace oc
