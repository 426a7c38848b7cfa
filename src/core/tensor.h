// Element types, shapes and a host tensor. Compute code works on raw float spans with
// explicit sizes (llm.c style); these types carry tensors across I/O boundaries
// (safetensors, .pt checkpoints, golden files) and name their dtype as safetensors does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace oc {

enum class DType : uint8_t { F64, F32, BF16, F16, I64, I32, I16, I8, U8, Bool };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "F32", "BF16", ... (safetensors spelling)
bool dtype_from_name(std::string_view name, DType* out);

using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[2, 3]"

// An owning, contiguous, row-major host tensor.
struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType t, Shape s) : dtype(t), shape(std::move(s)), bytes(size_t(oc::numel(shape)) * dtype_size(t)) {}
  static HostTensor from_f32(Shape s, std::span<const float> v);
  int64_t numel() const { return oc::numel(shape); }
  float* f32() { return reinterpret_cast<float*>(bytes.data()); }
  const float* f32() const { return reinterpret_cast<const float*>(bytes.data()); }
  // Converts any floating/integer dtype to float values.
  std::vector<float> to_f32() const;
};

// A non-owning view of contiguous row-major data (for writers).
struct TensorView {
  DType dtype = DType::F32;
  Shape shape;
  const void* data = nullptr;
  size_t nbytes() const { return size_t(numel(shape)) * dtype_size(dtype); }
};

}  // namespace oc
