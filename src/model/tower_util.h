// What every tower's plan and forward share: the buffers outside the block stack, the block
// stack's dimensions for one run, and the uploaded image batch cut into patches.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/transformer.h"
#include "ops/backend.h"

namespace oc {

// A tower's buffers outside the block stack, each named with its size in one line; then one
// allocation, carved into 64-byte aligned slices in the order they were named.
class BufferPlan {
 public:
  BufferPlan& add(float** slot, size_t n) {
    items_.push_back({slot, n});
    return *this;
  }
  void allocate(ops::FloatArena& arena);

 private:
  struct Item {
    float** slot;
    size_t n;
  };
  std::vector<Item> items_;
};

// The stack's dimensions for one run of B rows of T tokens (width W, heads H, MLP width F,
// L blocks). With bf16 activations (mem.bf16_acts()) the weights are the int8 ones when w8 is
// set, else the bf16 copies.
struct StackShape {
  int64_t W, H, F, L;
  bool causal;
  ops::Act act;
  double eps;
};
StackDims stack_dims(int64_t B, int64_t T, const StackShape& s, ops::Prec prec, const StackMemory& mem,
                     const std::vector<BlockWeights16>* w16, const std::vector<BlockWeightsInt8>* w8, ops::Backend* be);

// The patches [B, (S/P)^2, 3 P P] of images [B, 3, S, S] into `patches`: from host memory
// (uploaded into `upload` first on a device backend; the host backends read them in place) or
// from backend memory (`in_backend`).
void images_to_patches(ops::Backend& be, float* patches, float* upload, const float* images, bool in_backend, int64_t B,
                       int64_t S, int64_t P);

}  // namespace oc
