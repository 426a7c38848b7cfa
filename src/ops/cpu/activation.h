// The CPU kernels of GELU / QuickGELU and the residual add (contract: ops/activation.h),
// templates for float and double (the gradient checks).
#pragma once
#include <cstdint>

#include "ops/activation.h"

namespace oc::ops {

template <typename T>
void act_forward(T* out, const T* inp, int64_t n, Act act);
template <typename T>
void act_backward(T* dinp, const T* dout, const T* inp, int64_t n, Act act);
template <typename T>
void add_inplace(T* y, const T* x, int64_t n);

}  // namespace oc::ops
