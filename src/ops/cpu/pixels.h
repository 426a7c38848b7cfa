// The CPU kernel of uint8 image normalisation (contract: ops/pixels.h). fp32 only: its input
// is uint8 and its contract is an fp32 expression (no double instantiation).
#pragma once
#include <cstdint>

#include "ops/pixels.h"

namespace oc::ops {

// mean[3], std[3]: host floats.
void normalize_images(float* out, const uint8_t* px, const float* mean, const float* std, int64_t B, int64_t S);

}  // namespace oc::ops
