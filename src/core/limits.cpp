#include "core/limits.h"

#include <fmt/format.h>

namespace oc {

Result<uint64_t> claimed_bytes(std::string_view where, std::string_view what, uint64_t count, uint64_t unit,
                               uint64_t present) {
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, unit, &bytes))
    return Err{fmt::format("{}: {} claims {} x {} bytes, which overflows 64 bits", where, what, count, unit)};
  if (bytes > present)
    return Err{fmt::format("{}: {} claims {} x {} bytes = {} bytes but only {} are present", where, what, count, unit,
                           bytes, present)};
  return bytes;
}

Status within_cap(std::string_view where, std::string_view what, uint64_t bytes, const Cap& cap) {
  if (bytes <= cap.bytes) return {};
  return Err{fmt::format("{}: {} needs {} bytes, over {} ({} bytes)", where, what, bytes, cap.name, cap.bytes)};
}

std::string json_error_text(const char* what) {
  std::string_view w(what);
  if (w.rfind("[json.exception.", 0) == 0)
    if (size_t end = w.find("] "); end != std::string_view::npos) w.remove_prefix(end + 2);
  return std::string(w);
}

}  // namespace oc
