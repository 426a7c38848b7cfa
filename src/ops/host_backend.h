// Memory of the backends that compute on the host (ref, cpu): 64-byte aligned heap blocks,
// memcpy/memset, scalars read and written in place. A device backend implements the same
// methods with its allocator and copies.
#pragma once
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "ops/backend.h"

namespace oc::ops {

class HostBackend : public Backend {
 public:
  bool host_memory() const override { return true; }
  void zero(void* dst, size_t bytes) override {
    if (bytes) std::memset(dst, 0, bytes);
  }
  void fill(float* dst, int64_t n, float v) override { std::fill(dst, dst + n, v); }
  void copy_from_host(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) std::memmove(dst, src, bytes);
  }
  float read_scalar(const float* p) override { return *p; }
  void write_scalar(float* p, float v) override { *p = v; }
  void synchronize() override {}
  void round_to_bf16(float* x, int64_t n) override { oc::round_to_bf16(x, x, size_t(n)); }

 protected:
  void* allocate(size_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
  void release(void* p) override { std::free(p); }
};

}  // namespace oc::ops
