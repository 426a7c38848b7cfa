// 64-byte aligned float storage for parameters, gradients, optimizer state and
// activations: one allocation per arena, carved into named slices by the model.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace oc {

class FloatBuffer {
 public:
  FloatBuffer() = default;
  explicit FloatBuffer(size_t n, bool zero = true) { resize(n, zero); }
  void resize(size_t n, bool zero = true) {
    data_.reset();
    size_ = n;
    if (n == 0) return;
    void* p = std::aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64);
    if (!p) throw std::bad_alloc();
    data_.reset(static_cast<float*>(p));
    if (zero) std::memset(p, 0, n * sizeof(float));
  }
  void zero() {
    if (size_) std::memset(data_.get(), 0, size_ * sizeof(float));
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }
  double mib() const { return double(size_) * sizeof(float) / (1 << 20); }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  size_t size_ = 0;
};

}  // namespace oc
