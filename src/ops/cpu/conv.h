// The CPU kernels of the 2-D convolution (contract: ops/conv.h; channels-last activations,
// OIHW weights). float runs oneDNN's convolution primitives (cached per shape and thread);
// double is a plain loop nest for the gradient checks (with Prec::BF16 it rounds its inputs
// to bf16 values as the float path does).
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/conv.h"

namespace oc::ops {

// out = act(conv + bias + residual) (ops/conv.h's Conv2dForwardArgs; bias, residual null: none).
template <typename T>
void conv2d_forward(T* out, const T* inp, const T* weight, const ConvShape& s, Prec prec = Prec::F32,
                    const T* bias = nullptr, const T* residual = nullptr, bool relu = false);
template <typename T>
void conv2d_backward_data(T* dinp, const T* dout, const T* weight, const ConvShape& s, Prec prec = Prec::F32);
// dweight += (accumulates).
template <typename T>
void conv2d_backward_weights(T* dweight, const T* dout, const T* inp, const ConvShape& s, Prec prec = Prec::F32);

// Backend::prepare_conv_weight / release_conv_weight on cpu: W (OIHW, `size` floats) is fixed
// until released (preparing it again drops the copies of what it held); the forward keeps its
// reordered copies (one per layout a primitive asks for).
void prepare_conv_weight(const float* W, int64_t size);
void release_conv_weight(const float* W);
// How many reordered copies of prepared W are kept (tests).
size_t prepared_conv_copies(const float* W);

}  // namespace oc::ops
