// Quantization with a static per-tensor scale (ops/gemm_int8.h's contract), shared by the
// int8 GEMMs' input path, layernorm_int8 and the attention's int8 output.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/bf16.h"

namespace oc::ops::cpu {

// q[k] = round(x[k] * inv) clamped to +-127; returns false when some x[k] is NaN or Inf (then
// its q is -127 or 127: the caller marks the row's scale NaN, which makes its outputs NaN).
inline float as_float(float x) { return x; }
inline float as_float(bf16 x) { return to_f32(x); }

template <typename T>
bool quantize_static(const T* x, int64_t n, int8_t* q, float inv) {
  uint32_t mx = 0;  // max |x| as ordered bits (NaN above Inf), one vectorizable pass
#pragma omp simd reduction(max : mx)
  for (int64_t k = 0; k < n; ++k) {
    const float f = as_float(x[k]);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    mx = std::max(mx, u & 0x7fffffffu);
    float v = f * inv;
    v = (v >= -127.0f && v <= 127.0f) ? v : (v > 0.0f ? 127.0f : -127.0f);  // NaN -> -127 (no UB cast)
    q[k] = int8_t(std::nearbyint(v));
  }
  return mx < 0x7f800000u;
}

// Marks row scale `s` NaN; several threads (the heads of one row) may do it at once.
inline void mark_row_nan(float* s) { std::atomic_ref<float>(*s).store(std::nanf(""), std::memory_order_relaxed); }

}  // namespace oc::ops::cpu
