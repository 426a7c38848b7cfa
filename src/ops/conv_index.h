// Element offsets of a convolution's operands (ops/conv.h's layouts: channels-last activations,
// OIHW weights) for the loop-by-loop definitions: the reference backend and the CPU backend's
// double path (the gradient checks) index the same way.
#pragma once
#include <cstdint>

#include "ops/conv.h"

namespace oc::ops {

struct ConvIndex {
  const ConvShape& s;
  int64_t x(int64_t n, int64_t h, int64_t w, int64_t c) const { return ((n * s.H + h) * s.W + w) * s.C + c; }
  int64_t y(int64_t n, int64_t oh, int64_t ow, int64_t o) const { return ((n * s.OH() + oh) * s.OW() + ow) * s.OC + o; }
  int64_t w(int64_t o, int64_t c, int64_t i, int64_t j) const { return ((o * s.C + c) * s.K + i) * s.K + j; }
  // The input row (column) that kernel tap i of output row (column) o reads; may be outside.
  int64_t in(int64_t o, int64_t i) const { return o * s.stride - s.pad + i; }
};

}  // namespace oc::ops
