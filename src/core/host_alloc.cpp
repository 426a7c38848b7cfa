#include "core/host_alloc.h"

#include <cstdlib>

#include "core/out_of_memory.h"

namespace oc {
namespace {

class PlainHostAllocator final : public HostAllocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p && bytes) throw OutOfMemory(bytes, fmt::format("cannot allocate {} bytes of host memory", bytes));
    return p;
  }
  void release(void* p, size_t) noexcept override { std::free(p); }
  std::string_view name() const override { return "plain"; }
};

}  // namespace

HostAllocator& plain_host_allocator() {
  // Never destroyed: buffers (a loader's pool) may be released during static destruction.
  static PlainHostAllocator& a = *new PlainHostAllocator;
  return a;
}

}  // namespace oc
