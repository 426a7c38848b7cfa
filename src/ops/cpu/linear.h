// The CPU kernels of nn.Linear and the projections (contract: ops/linear.h), templates for
// float and double.
#pragma once
#include <cstdint>

#include "ops/linear.h"

namespace oc::ops {

template <typename T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t M, int64_t K, int64_t N,
                    Prec prec = Prec::F32);
template <typename T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t M,
                     int64_t K, int64_t N, Prec prec = Prec::F32);
template <typename T>
void proj_forward(T* out, const T* inp, const T* w, int64_t M, int64_t K, int64_t N, Prec prec = Prec::F32);
template <typename T>
void proj_backward(T* dinp, T* dw, const T* dout, const T* inp, const T* w, int64_t M, int64_t K, int64_t N,
                   Prec prec = Prec::F32);

}  // namespace oc::ops
