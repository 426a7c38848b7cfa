// Errors and checks. Internal invariants throw oc::Error with "file:line: message";
// data-path code returns oc::Result (result.h) so callers can skip and count.
#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace oc {

// The one exception type of the library. `what()` says what failed and where.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

[[noreturn]] void fail_at(const char* file, int line, const std::string& msg);

}  // namespace oc

// OC_CHECK(cond, "fmt {}", args...): throws oc::Error("<file>:<line>: check `cond` failed: msg").
#define OC_CHECK(cond, ...)                                                              \
  do {                                                                                   \
    if (!(cond)) [[unlikely]]                                                            \
      ::oc::fail_at(__FILE__, __LINE__, std::string("check `" #cond "` failed: ") +      \
                                            ::fmt::format(__VA_ARGS__));                 \
  } while (0)

// OC_FAIL("fmt {}", args...): unconditional error with file:line.
#define OC_FAIL(...) ::oc::fail_at(__FILE__, __LINE__, ::fmt::format(__VA_ARGS__))

// A user-facing error (bad flag, missing file): no file:line, the message says it all.
#define OC_USER_ERROR(...) throw ::oc::Error(::fmt::format(__VA_ARGS__))
