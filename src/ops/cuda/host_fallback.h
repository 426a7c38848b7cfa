// SLOW HOST FALLBACK for what the CUDA backend has no kernel for (today: attention on
// sequences too long for the kernel's shared memory; new ops until they get one): copy every
// argument to host memory, run the cpu backend's kernel, copy the outputs back. Correct (the cpu kernel's arithmetic) and slow
// (two PCIe transfers and a stream synchronisation per call); each use is labelled in
// cuda_backend.cpp and listed in docs/CUDA.md. UNTESTED ON A GPU.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <deque>
#include <memory>

#include "ops/cuda/cuda_check.h"

namespace oc::ops::cuda {

class HostMirror {
 public:
  explicit HostMirror(cudaStream_t s) : s_(s) { OC_CUDA_CHECK(cudaStreamSynchronize(s_)); }
  ~HostMirror() = default;
  // A host copy of n elements at device pointer d (null stays null), read only.
  template <class T>
  const T* in(const T* d, int64_t n) {
    return static_cast<const T*>(mirror(d, size_t(n) * sizeof(T), false));
  }
  // A host copy that finish() writes back (outputs and accumulated gradients).
  template <class T>
  T* io(T* d, int64_t n) {
    return static_cast<T*>(mirror(d, size_t(n) * sizeof(T), true));
  }
  void finish() {
    for (Block& b : blocks_)
      if (b.write_back) OC_CUDA_CHECK(cudaMemcpyAsync(b.dev, b.host.get(), b.bytes, cudaMemcpyHostToDevice, s_));
    OC_CUDA_CHECK(cudaStreamSynchronize(s_));
  }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  struct Block {
    void* dev;
    std::unique_ptr<void, Free> host;
    size_t bytes;
    bool write_back;
  };
  void* mirror(const void* d, size_t bytes, bool write_back) {
    if (!d) return nullptr;
    std::unique_ptr<void, Free> h(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64));
    OC_CHECK(h != nullptr, "host fallback: cannot allocate {} bytes of host memory", bytes);
    OC_CUDA_CHECK(cudaMemcpyAsync(h.get(), d, bytes, cudaMemcpyDeviceToHost, s_));
    void* p = h.get();
    blocks_.push_back({const_cast<void*>(d), std::move(h), bytes, write_back});
    OC_CUDA_CHECK(cudaStreamSynchronize(s_));
    return p;
  }
  cudaStream_t s_;
  std::deque<Block> blocks_;
};

}  // namespace oc::ops::cuda
