// Device scratch slots and the out-of-memory hint (device_ctx.h).
#include "ops/cuda/device_ctx.h"

#include <fmt/format.h>

#include "ops/cuda/cuda_check.h"

namespace oc::ops::cuda {

ScratchPool::~ScratchPool() {
  cudaStreamSynchronize(s_);
  for (Block& b : slots_)
    if (b.p) cudaFree(b.p);
}

void* ScratchPool::get(Slot slot, size_t bytes) {
  Block& b = slots_[size_t(slot)];
  if (b.bytes >= bytes) return b.p;
  OC_CUDA_CHECK(cudaStreamSynchronize(s_));  // work queued on the old buffer ends first
  if (b.p) OC_CUDA_CHECK(cudaFree(b.p));
  b = Block{};
  const size_t g = bytes < (size_t(1) << 20) ? 512 : (size_t(2) << 20);
  const size_t want = (bytes + g - 1) / g * g;
  if (cudaMalloc(&b.p, want) != cudaSuccess) {
    cudaGetLastError();
    b.p = nullptr;
    OC_USER_ERROR("backend cuda: cannot allocate {} bytes of scratch{}", want, gpu_memory_hint(device_));
  }
  b.bytes = want;
  return b.p;
}

std::string gpu_memory_hint(int device) {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  return fmt::format(" on GPU {}: {:.2f} GiB free of {:.2f} GiB; try a smaller --batch-size or --grad-checkpointing",
                     device, double(free_b) / double(1ull << 30), double(total_b) / double(1ull << 30));
}

}  // namespace oc::ops::cuda
