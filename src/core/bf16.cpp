#include "core/bf16.h"

namespace oc {

void f32_to_bf16(const float* src, bf16* dst, size_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (size_t i = 0; i < n; ++i) dst[i] = to_bf16(src[i]);
}

void bf16_to_f32(const bf16* src, float* dst, size_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (size_t i = 0; i < n; ++i) dst[i] = to_f32(src[i]);
}

void round_to_bf16(const float* src, float* dst, size_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (size_t i = 0; i < n; ++i) dst[i] = round_bf16(src[i]);
}

}  // namespace oc
