// The CPU kernels of ModifiedResNet's pooling (contract: ops/pool.h) and of ReLU
// (ops/activation.h), channels-last; templates for float and double (the gradient checks).
#pragma once
#include <cstdint>

#include "ops/activation.h"
#include "ops/pool.h"

namespace oc::ops {

template <typename T>
void avg_pool_forward(T* out, const T* inp, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k);
template <typename T>
void avg_pool_backward(T* dinp, const T* dout, int64_t N, int64_t H, int64_t W, int64_t C, int64_t k);
template <typename T>
void attnpool_tokens_forward(T* x, const T* feat, const T* pos, int64_t N, int64_t HW, int64_t C);
template <typename T>
void attnpool_tokens_backward(T* dfeat, T* dpos, const T* dx, int64_t N, int64_t HW, int64_t C);
template <typename T>
void relu_forward(T* out, const T* inp, int64_t n);
template <typename T>
void relu_backward(T* dinp, const T* dout, const T* out, int64_t n);

}  // namespace oc::ops
