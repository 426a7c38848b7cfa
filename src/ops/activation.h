// GELU (exact, erf; nn.GELU) and QuickGELU (x * sigmoid(1.702 x); OpenAI weights).
#pragma once
#include <cstdint>

namespace oc::ops {

enum class Act { Gelu, QuickGelu };

template <typename T>
void act_forward(T* out, const T* inp, int64_t n, Act act);
// dinp = dout * act'(inp) (assigned; dinp may alias dout).
template <typename T>
void act_backward(T* dinp, const T* dout, const T* inp, int64_t n, Act act);

// y += x (the residual add), n elements.
template <typename T>
void add_inplace(T* y, const T* x, int64_t n);

}  // namespace oc::ops
