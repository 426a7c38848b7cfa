// The message of the oc::Error a call throws, for tests of error messages.
#pragma once
#include <functional>
#include <string>

#include "core/check.h"

namespace oc::test {

// The message of the oc::Error that `fn` throws, or "" when it returns.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace oc::test
