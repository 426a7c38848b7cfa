#include "core/bf16.h"

namespace oc {

void round_to_bf16(const float* src, float* dst, size_t n) {
#pragma omp parallel for schedule(static) if (n > (1 << 16))
  for (size_t i = 0; i < n; ++i) dst[i] = round_bf16(src[i]);
}

}  // namespace oc
