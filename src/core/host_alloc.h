// Host memory that a backend reads often, such as the data loader's batch buffers: allocated
// through an allocator the backend provides (ops::Backend::host_allocator), so a device
// backend can hand out pinned (page-locked) memory that its copy engine reads directly and
// asynchronously, while the code that fills it (data/) knows nothing of the device.
// The host backends (and the default) give plain 64-byte aligned heap memory.
#pragma once
#include <cstddef>
#include <string_view>
#include <type_traits>
#include <vector>

namespace oc {

class HostAllocator {
 public:
  virtual ~HostAllocator() = default;
  // Throws oc::OutOfMemory (core/out_of_memory.h) naming the bytes when the memory cannot be
  // had; never null for bytes > 0.
  virtual void* allocate(size_t bytes) = 0;
  // `p` from allocate(bytes) of this allocator.
  virtual void release(void* p, size_t bytes) noexcept = 0;
  virtual std::string_view name() const = 0;  // "plain", "cuda pinned"
};

// aligned_alloc(64) / free; lives for the whole process.
HostAllocator& plain_host_allocator();

// The standard-allocator face of a HostAllocator, so a std::vector can live in its memory
// (HostVector). It propagates with the container (move, copy, swap), so a buffer is always
// released by the allocator that made it.
template <class T>
struct HostAlloc {
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;

  HostAlloc() = default;
  explicit HostAlloc(HostAllocator& a) : a_(&a) {}
  template <class U>
  HostAlloc(const HostAlloc<U>& o) : a_(&o.allocator()) {}  // NOLINT: rebinding is implicit

  T* allocate(size_t n) { return static_cast<T*>(a_->allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { a_->release(p, n * sizeof(T)); }
  HostAllocator& allocator() const { return *a_; }
  friend bool operator==(const HostAlloc& x, const HostAlloc& y) { return x.a_ == y.a_; }

 private:
  HostAllocator* a_ = &plain_host_allocator();
};

template <class T>
using HostVector = std::vector<T, HostAlloc<T>>;

}  // namespace oc
