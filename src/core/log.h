// Logging in OpenCLIP's format: "%Y-%m-%d,%H:%M:%S | LEVEL | message", to stderr and
// optionally a file (the run's out.log). Thread-safe; rank != 0 is silent unless enabled.
#pragma once
#include <fmt/format.h>

#include <string>
#include <string_view>

namespace oc::log {

enum class Level { Debug, Info, Warning, Error };

void set_level(Level level);
Level level();
// Also append every line to `path` (created; parent must exist). Empty path closes it.
void set_file(const std::string& path);
// Silence console and file output (non-zero ranks).
void set_enabled(bool enabled);
void write(Level level, std::string_view msg);
// A live status line on the console when stderr is a terminal (training progress): drawn
// in place, cleared before the next log line. No-op when stderr is not a terminal.
void progress(std::string_view line);
void end_progress();

template <class... A>
void debug(fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::Debug) write(Level::Debug, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void info(fmt::format_string<A...> f, A&&... a) {
  if (level() <= Level::Info) write(Level::Info, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void warn(fmt::format_string<A...> f, A&&... a) {
  write(Level::Warning, fmt::format(f, std::forward<A>(a)...));
}
template <class... A>
void error(fmt::format_string<A...> f, A&&... a) {
  write(Level::Error, fmt::format(f, std::forward<A>(a)...));
}

}  // namespace oc::log
