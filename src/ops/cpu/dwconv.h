// The CPU kernels of the depthwise convolution (contract: ops/dwconv.h; channels-last
// activations, [C,1,K,K] weights); templates for float and double (the gradient checks).
#pragma once
#include "ops/dwconv.h"

namespace oc::ops {

template <typename T>
void dwconv2d_forward(T* out, const T* inp, const T* weight, const T* bias, const DwConvShape& s,
                      Prec prec = Prec::F32);
template <typename T>
void dwconv2d_backward_data(T* dinp, const T* dout, const T* weight, const DwConvShape& s, Prec prec = Prec::F32);
// dweight += , dbias += (accumulate; dbias may be null).
template <typename T>
void dwconv2d_backward_weights(T* dweight, T* dbias, const T* dout, const T* inp, const DwConvShape& s,
                               Prec prec = Prec::F32);

}  // namespace oc::ops
