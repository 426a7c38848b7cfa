#include "hub/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "core/log.h"

namespace oc::hub {

namespace {
double mb(int64_t b) { return double(b) / 1e6; }
}  // namespace

Progress::Progress(std::string name, int64_t total, int64_t have, bool enabled)
    : name_(std::move(name)),
      total_(total),
      start_have_(have),
      enabled_(enabled),
      tty_(::isatty(2) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {
  if (!enabled_ || tty_) return;
  log::info("downloading {} ({:.1f} MB{})", name_, mb(total_),
            have > 0 ? fmt::format(", resuming at {} bytes", have) : "");
}

void Progress::update(int64_t have) {
  if (!enabled_ || !tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_ < std::chrono::milliseconds(100)) return;
  last_ = now;
  const double s = std::chrono::duration<double>(now - start_).count();
  const int width = 30, done = total_ > 0 ? int(width * double(have) / double(total_)) : 0;
  std::string bar(size_t(std::clamp(done, 0, width)), '#');
  bar.resize(size_t(width), '.');
  log::progress(fmt::format("{} [{}] {:.1f}/{:.1f} MB {:.1f} MB/s", name_, bar, mb(have), mb(total_),
                            s > 0 ? mb(have - start_have_) / s : 0.0));
}

void Progress::finish(int64_t have) {
  if (!enabled_) return;
  if (tty_) log::end_progress();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  log::info("downloaded {}: {:.1f} MB in {:.1f} s ({:.1f} MB/s)", name_, mb(have), s,
            s > 0 ? mb(have - start_have_) / s : 0.0);
}

}  // namespace oc::hub
