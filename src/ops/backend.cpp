// Buffer ownership and the allocation error.
#include "ops/backend.h"

#include <fmt/format.h>

#include "core/check.h"
#include "core/checked.h"
#include "core/out_of_memory.h"

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

Prefetch& Prefetch::operator=(Prefetch&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_, data_ = o.data_, bytes_ = o.bytes_, slot_ = o.slot_, copy_ = std::move(o.copy_);
    o.owner_ = nullptr, o.data_ = nullptr, o.bytes_ = 0, o.slot_ = -1;
  }
  return *this;
}

void Prefetch::reset() noexcept {
  if (owner_ && slot_ >= 0) owner_->end_prefetch(slot_);
  copy_.reset();
  owner_ = nullptr, data_ = nullptr, bytes_ = 0, slot_ = -1;
}

Prefetch Backend::make_prefetch(const void* data, size_t bytes, int slot) {
  Prefetch p;
  p.owner_ = this, p.data_ = data, p.bytes_ = bytes, p.slot_ = slot;
  return p;
}

void Backend::await(const Prefetch& p) {
  OC_CHECK(p.owner_ == this, "backend {}: a prefetch of backend {} awaited here", name(),
           p.owner_ ? p.owner_->name() : "none");
  if (p.slot_ >= 0) await_prefetch(p.slot_);
}

Prefetch Backend::prefetch(const void* host, size_t bytes, std::string_view what) {
  if (host_memory()) return make_prefetch(host, bytes, -1);  // read in place, as before
  Prefetch p = make_prefetch(nullptr, bytes, -1);
  p.copy_ = alloc(bytes, what);
  copy_from_host(p.copy_.data(), host, bytes);
  p.data_ = p.copy_.data();
  return p;
}

Buffer Backend::alloc(size_t bytes, std::string_view what) {
  if (bytes == 0) return Buffer(this, nullptr, 0);
  void* p = allocate(bytes);
  if (!p)
    throw OutOfMemory(bytes, fmt::format("backend {}: cannot allocate {} bytes ({:.2f} GiB) for {}{}", name(), bytes,
                                         double(bytes) / double(1ull << 30), what, alloc_failure_hint(bytes)));
  return Buffer(this, p, bytes);
}

Buffer Backend::alloc_floats(size_t n, std::string_view what, bool zero_it) {
  Buffer b = alloc(size_t(checked_mul(what, {int64_t(n), int64_t(sizeof(float))})), what);
  if (zero_it) zero(b.data(), b.bytes());
  return b;
}

}  // namespace oc::ops
