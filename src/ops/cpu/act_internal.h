// Float activation kernel shared inside ops/cpu (not part of the op interface).
#pragma once
#include <cstdint>

#include "ops/cpu/activation.h"

namespace oc::ops::cpu {

// out = act(inp) and dinp = dout * act'(inp) from one evaluation of the activation's
// transcendental (GELU's erf, QuickGELU's exp): bitwise what act_forward<float> and
// act_backward<float> give. Single-threaded; dinp may alias dout.
void act_value_and_grad_f32(float* out, float* dinp, const float* dout, const float* inp, int64_t n, Act act);

}  // namespace oc::ops::cpu
