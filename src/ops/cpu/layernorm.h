// The CPU LayerNorm kernels (contract: ops/layernorm.h), templates for float and double;
// statistics in the op's type (fp32 for float).
#pragma once
#include <cstdint>

#include "ops/layernorm.h"

namespace oc::ops {

template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t N,
                       int64_t C, double eps);
template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const T* mean, const T* rstd, int64_t N, int64_t C);

}  // namespace oc::ops
