// Buffer ownership and the allocation error.
#include "ops/backend.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/checked.h"

namespace oc::ops {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_, ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.owner_ = nullptr, o.ptr_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (ptr_) owner_->release(ptr_);
  owner_ = nullptr, ptr_ = nullptr, bytes_ = 0;
}

Buffer Backend::alloc(size_t bytes, std::string_view what) {
  if (bytes == 0) return Buffer(this, nullptr, 0);
  void* p = allocate(bytes);
  if (!p)
    OC_USER_ERROR("backend {}: cannot allocate {} bytes ({:.2f} GiB) for {}{}", name(), bytes,
                  double(bytes) / double(1ull << 30), what, alloc_failure_hint(bytes));
  return Buffer(this, p, bytes);
}

Buffer Backend::alloc_floats(size_t n, std::string_view what, bool zero_it) {
  Buffer b = alloc(size_t(checked_mul(what, {int64_t(n), int64_t(sizeof(float))})), what);
  if (zero_it) zero(b.data(), b.bytes());
  return b;
}

}  // namespace oc::ops
