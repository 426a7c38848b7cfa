// The backends that compute on the host (ref, cpu). HostBackend: their memory, 64-byte
// aligned heap blocks, memcpy/memset, scalars read and written in place (a device backend
// implements the same methods with its allocator and copies). KernelBackend: every op of
// ops/op_list.h forwarded to the kernels' `run` overloads, so a host backend is its name plus
// a namespace of kernels.
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

 protected:
  void* allocate(size_t bytes) override { return std::aligned_alloc(64, (bytes + 63) / 64 * 64); }
  void release(void* p) override { std::free(p); }
};

// Kernels::run(args) for every op: `struct Kernels { static auto run(const auto& a) { return
// cpu::run(a); } };` (the kernels' overloads are declared with OC_DECLARE_KERNEL).
template <class Kernels>
class KernelBackend : public HostBackend {
 public:
#define OC_KERNEL_RUN(A) \
  op_result_t<A> run(const A& a) override { return Kernels::run(a); }
  OC_OPS(OC_KERNEL_RUN)
#undef OC_KERNEL_RUN
};

}  // namespace oc::ops
