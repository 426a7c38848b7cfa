// The CUDA backend's batch transfers (docs/CUDA.md, "Batches"): pinned host memory for the
// loader's batch buffers, and uploads on a second stream that overlap the ops stream.
// Plain C++ (no device code). First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "core/host_alloc.h"

namespace oc::ops::cuda {

// cudaHostAlloc (portable, so any context may copy from it) with `device` current, so that
// a loader thread allocating it does not create a context on GPU 0. One per device, never
// destroyed (batches may be released during static destruction).
HostAllocator& pinned_host_allocator(int device);

// Backend::prefetch on cuda. Each upload takes a slot: a device buffer (kept; grown when a
// larger upload comes), the event its copy records (await: the ops stream waits for it) and
// the event the ops stream records when the handle is released (the next copy into the slot
// waits for that one, so it cannot overwrite bytes that queued ops still read). Slots are
// reused, so a steady run allocates nothing: two are in use per batch in flight (the step's
// and the next one's). Used from the thread that runs the backend's ops.
class Uploader {
 public:
  Uploader(int device, cudaStream_t ops);
  ~Uploader();
  Uploader(const Uploader&) = delete;
  Uploader& operator=(const Uploader&) = delete;

  struct Started {
    void* data;
    int slot;
  };
  // Queues the copy of `bytes` from `host` on the copy stream (asynchronous from pinned
  // memory; from pageable memory the driver stages it before returning).
  Started start(const void* host, size_t bytes);
  void await(int slot);             // the ops stream waits for the slot's copy
  void release(int slot) noexcept;  // the reads queued so far end the slot's use

 private:
  struct Slot {
    void* dev = nullptr;
    size_t cap = 0;
    cudaEvent_t copied = nullptr, read = nullptr;
    bool busy = false, read_recorded = false;
  };
  int take_slot(size_t bytes);
  int device_;
  cudaStream_t ops_ = nullptr, copy_ = nullptr;
  std::vector<Slot> slots_;
};

}  // namespace oc::ops::cuda
