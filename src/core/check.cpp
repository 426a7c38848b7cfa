#include "core/check.h"

#include <cstring>

namespace oc {

[[noreturn]] void fail_at(const char* file, int line, const std::string& msg) {
  const char* base = std::strstr(file, "src/");
  throw Error(fmt::format("{}:{}: {}", base ? base : file, line, msg));
}

}  // namespace oc
