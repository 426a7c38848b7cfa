// LayerNorm over the last dimension, statistics in the op's type (fp32 for float).
#pragma once
#include <cstdint>

namespace oc::ops {

// out[N,C] = (inp - mean) * rstd * weight + bias; saves mean[N], rstd[N] for backward.
template <typename T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* inp, const T* weight, const T* bias, int64_t N,
                       int64_t C, double eps);

// dinp[N,C] += ... (ACCUMULATES: LayerNorm sits on the residual stream),
// dweight[C] += ..., dbias[C] += ....
template <typename T>
void layernorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight,
                        const T* mean, const T* rstd, int64_t N, int64_t C);

}  // namespace oc::ops
