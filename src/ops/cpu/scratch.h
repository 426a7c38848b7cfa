// Growable per-thread scratch buffers: the only memory the CPU ops allocate. A buffer grows
// to the largest size asked for and is then reused, so a training loop with fixed shapes
// allocates nothing after its first step. Per thread, so ops may call each other from inside
// an OpenMP parallel region (attention calls gemm per head) without sharing a buffer.
#pragma once
#include <array>
#include <cstddef>
#include <vector>

namespace oc::ops::cpu {

// One slot per concurrent use within a thread: a callee never uses its caller's slot.
enum class Scratch { GemmA, GemmB, GemmC, LayerNormPartial, Reduce, Attn, Bf16Partial, kCount };

template <typename T>
T* thread_scratch(Scratch slot, size_t n) {
  thread_local std::array<std::vector<T>, size_t(Scratch::kCount)> bufs;
  auto& b = bufs[size_t(slot)];
  if (b.size() < n) b.resize(n);
  return b.data();
}

}  // namespace oc::ops::cpu
