// The CPU kernels of the 2-D convolution (contract: ops/conv.h; channels-last activations,
// OIHW weights). float runs oneDNN's convolution primitives (cached per shape and thread);
// double is a plain loop nest for the gradient checks (with Prec::BF16 it rounds its inputs
// to bf16 values as the float path does).
#pragma once
#include <cstdint>

#include "ops/conv.h"

namespace oc::ops {

template <typename T>
void conv2d_forward(T* out, const T* inp, const T* weight, const ConvShape& s, Prec prec = Prec::F32);
template <typename T>
void conv2d_backward_data(T* dinp, const T* dout, const T* weight, const ConvShape& s, Prec prec = Prec::F32);
// dweight += (accumulates).
template <typename T>
void conv2d_backward_weights(T* dweight, const T* dout, const T* inp, const ConvShape& s, Prec prec = Prec::F32);

}  // namespace oc::ops
