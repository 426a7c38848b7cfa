// Pinned batch memory and the copy stream (batch_upload.h). First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/batch_upload.h"

#include <array>
#include <cstdio>
#include <mutex>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/device_ctx.h"

namespace oc::ops::cuda {
namespace {

class PinnedHostAllocator final : public HostAllocator {
 public:
  explicit PinnedHostAllocator(int device) : device_(device) {}
  void* allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    OC_CUDA_CHECK(cudaSetDevice(device_));  // per thread: a loader worker's first CUDA call
    void* p = nullptr;
    if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
      cudaGetLastError();
      OC_USER_ERROR(
          "cannot allocate {} bytes ({:.2f} GiB) of pinned host memory for a batch (cudaHostAlloc for "
          "GPU {}); try a smaller --batch-size or fewer --workers",
          bytes, double(bytes) / double(1ull << 30), device_);
    }
    return p;
  }
  void release(void* p, size_t) noexcept override {
    if (p) cudaFreeHost(p);  // an error at process exit (the driver gone) is of no use to anyone
  }
  std::string_view name() const override { return "cuda pinned"; }

 private:
  int device_;
};

}  // namespace

HostAllocator& pinned_host_allocator(int device) {
  static std::mutex mu;
  static std::array<PinnedHostAllocator*, 64> per_device{};
  OC_CHECK(device >= 0 && device < int(per_device.size()), "GPU index {}", device);
  std::lock_guard lock(mu);
  PinnedHostAllocator*& a = per_device[size_t(device)];
  if (!a) a = new PinnedHostAllocator(device);  // never freed: see batch_upload.h
  return *a;
}

Uploader::Uploader(int device, cudaStream_t ops) : device_(device), ops_(ops) {
  OC_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
}

Uploader::~Uploader() {
  cudaStreamSynchronize(copy_);
  cudaStreamSynchronize(ops_);  // the ops that read a slot end before its memory goes
  for (Slot& s : slots_) {
    if (s.dev) cudaFree(s.dev);
    if (s.copied) cudaEventDestroy(s.copied);
    if (s.read) cudaEventDestroy(s.read);
  }
  cudaStreamDestroy(copy_);
}

// A free slot holding at least `bytes` (the smallest such), else a free one grown, else a new one.
int Uploader::take_slot(size_t bytes) {
  int best = -1, any = -1;
  for (int i = 0; i < int(slots_.size()); ++i) {
    const Slot& s = slots_[size_t(i)];
    if (s.busy) continue;
    if (any < 0) any = i;
    if (s.cap >= bytes && (best < 0 || s.cap < slots_[size_t(best)].cap)) best = i;
  }
  if (best >= 0) return best;
  if (any < 0) {
    Slot s;
    OC_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
    OC_CUDA_CHECK(cudaEventCreateWithFlags(&s.read, cudaEventDisableTiming));
    slots_.push_back(s);
    any = int(slots_.size()) - 1;
  }
  Slot& s = slots_[size_t(any)];
  if (s.dev) {  // grow: the reads of its last use end first
    if (s.read_recorded) OC_CUDA_CHECK(cudaEventSynchronize(s.read));
    OC_CUDA_CHECK(cudaFree(s.dev));
    s.dev = nullptr, s.cap = 0, s.read_recorded = false;
  }
  if (cudaMalloc(&s.dev, bytes) != cudaSuccess) {
    cudaGetLastError();
    s.dev = nullptr;
    OC_USER_ERROR("backend cuda: cannot allocate {} bytes for a batch upload{}", bytes, gpu_memory_hint(device_));
  }
  s.cap = bytes;
  return any;
}

Uploader::Started Uploader::start(const void* host, size_t bytes) {
  const int i = take_slot(bytes);
  Slot& s = slots_[size_t(i)];
  if (s.read_recorded) OC_CUDA_CHECK(cudaStreamWaitEvent(copy_, s.read, 0));
  if (bytes) OC_CUDA_CHECK(cudaMemcpyAsync(s.dev, host, bytes, cudaMemcpyHostToDevice, copy_));
  OC_CUDA_CHECK(cudaEventRecord(s.copied, copy_));
  s.busy = true;
  return {s.dev, i};
}

void Uploader::await(int slot) {
  OC_CHECK(slot >= 0 && slot < int(slots_.size()) && slots_[size_t(slot)].busy, "await of upload slot {}", slot);
  OC_CUDA_CHECK(cudaStreamWaitEvent(ops_, slots_[size_t(slot)].copied, 0));
}

void Uploader::release(int slot) noexcept {
  if (slot < 0 || slot >= int(slots_.size())) return;
  Slot& s = slots_[size_t(slot)];
  // The host source may be refilled once the copy is done; the device buffer once the ops
  // queued until now have read it.
  cudaError_t e = cudaEventSynchronize(s.copied);
  if (e == cudaSuccess) e = cudaEventRecord(s.read, ops_);
  if (e != cudaSuccess) {  // the slot stays busy (retired): nothing may overwrite it unordered
    std::fprintf(stderr, "cuda: releasing batch upload slot %d: %s\n", slot, cudaGetErrorString(e));
    return;
  }
  s.read_recorded = true;
  s.busy = false;
}

}  // namespace oc::ops::cuda
