// What the CUDA backend's op implementations share: the stream, the cuBLASLt context, device
// scratch memory in named slots, and the device's limits. Plain C++ (no device code).
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <string>

#include "ops/cuda/gemm_lt.h"

namespace oc::ops::cuda {

// One scratch buffer per use, so that no two live uses of one op share memory.
enum class Slot {
  GemmOut,
  Index,
  AdamChunks,
  AttentionDS,
  AttentionP,  // the probabilities of an inference forward (att null)
  LossLogits,
  LossParts,
  ColumnParts,
  RoundA,
  RoundB,
  // attention_gemm.cpp
  AttnPack,
  AttnPackGrad,
  AttnScores,
  AttnProbs,
  AttnDS,
  AttnOut,
  // conv_ops.cpp
  ConvCol,
  ConvAct,
  ConvWeight,
  ConvDW,
  ConvFlag,
  ConvEpilogue,
  BnStats,
  Count
};

// Device scratch: each slot grows (never shrinks) to the largest request; reuse is ordered by
// the one stream. Growing synchronises the stream before freeing the old buffer.
class ScratchPool {
 public:
  ScratchPool(cudaStream_t s, int device) : s_(s), device_(device) {}
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;
  void* get(Slot slot, size_t bytes);
  template <class T>
  T* get(Slot slot, int64_t n) {
    return static_cast<T*>(get(slot, size_t(n) * sizeof(T)));
  }

 private:
  struct Block {
    void* p = nullptr;
    size_t bytes = 0;
  };
  cudaStream_t s_;
  int device_;
  std::array<Block, size_t(Slot::Count)> slots_{};
};

// " on GPU d: x GiB free of y GiB; try a smaller --batch-size or --grad-checkpointing".
std::string gpu_memory_hint(int device);

struct DeviceCtx {
  cudaStream_t s;
  LtContext& lt;
  ScratchPool& scratch;
  size_t smem_optin;  // cudaDevAttrMaxSharedMemoryPerBlockOptin: the attention kernels' limit
};

}  // namespace oc::ops::cuda
