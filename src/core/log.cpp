#include "core/log.h"

#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <unistd.h>

namespace oc::log {
namespace {
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
std::mutex g_mu;
Level g_level = Level::Info;
bool g_enabled = true;
std::unique_ptr<std::FILE, FileCloser> g_file;
bool g_progress_shown = false;

const char* name(Level l) {
  switch (l) {
    case Level::Debug: return "DEBUG";
    case Level::Info: return "INFO";
    case Level::Warning: return "WARNING";
    case Level::Error: return "ERROR";
  }
  return "?";
}
}  // namespace

void set_level(Level level) { g_level = level; }
Level level() { return g_level; }
void set_enabled(bool enabled) { g_enabled = enabled; }

void set_file(const std::string& path) {
  std::lock_guard lock(g_mu);
  g_file.reset(path.empty() ? nullptr : std::fopen(path.c_str(), "a"));
}

void write(Level level, std::string_view msg) {
  if (!g_enabled || level < g_level) return;
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d,%H:%M:%S", &tm);
  std::string line = fmt::format("{} | {} | {}\n", stamp, name(level), msg);
  std::lock_guard lock(g_mu);
  if (g_progress_shown) std::fputs("\r\033[K", stderr), g_progress_shown = false;
  std::fwrite(line.data(), 1, line.size(), stderr);
  if (g_file) {
    std::fwrite(line.data(), 1, line.size(), g_file.get());
    std::fflush(g_file.get());
  }
}

void progress(std::string_view line) {
  static const bool tty = ::isatty(2);
  if (!tty || !g_enabled) return;
  std::lock_guard lock(g_mu);
  std::fprintf(stderr, "\r\033[K%.*s", int(line.size()), line.data());
  std::fflush(stderr);
  g_progress_shown = true;
}

void end_progress() {
  std::lock_guard lock(g_mu);
  if (g_progress_shown) std::fputs("\r\033[K", stderr), g_progress_shown = false;
}

}  // namespace oc::log
