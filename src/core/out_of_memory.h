// Out of memory where the size is known (a backend's buffer, a host allocator's block): an
// oc::Error, so the CLI and the server report it as any error, that also carries the bytes
// asked for, so a caller can tell it from bad input. The Python module raises MemoryError for
// it, naming its call and this size (std::bad_alloc, whose size is not known, likewise).
#pragma once
#include <cstddef>
#include <string>

#include "core/check.h"

namespace oc {

class OutOfMemory : public Error {
 public:
  OutOfMemory(size_t bytes, const std::string& msg) : Error(msg), bytes_(bytes) {}
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
};

}  // namespace oc
