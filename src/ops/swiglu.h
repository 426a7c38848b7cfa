// timm's SwiGLU gate (EVA02's MLP: x = fc1_x(in), g = fc1_g(in), out = silu(g) * x, before the
// MLP's sub-LayerNorm and fc2), n elements; silu(g) = g * sigmoid(g).
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

// out = silu(gate) * x (out may alias x or gate).
struct SwigluForwardArgs {
  float* out;
  const float* gate;
  const float* x;
  int64_t n;
};

// dgate = dout * x * silu'(gate), dx = dout * silu(gate) (assigned; dgate / dx may alias dout,
// not each other). silu'(g) = s (1 + g (1 - s)), s = sigmoid(g).
struct SwigluBackwardArgs {
  float* dgate;
  float* dx;
  const float* dout;
  const float* gate;
  const float* x;
  int64_t n;
};

}  // namespace oc::ops
