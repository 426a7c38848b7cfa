// The CPU kernels of BatchNorm2d on channels-last rows (contract: ops/batchnorm.h), templates
// for float and double (the gradient checks). Column statistics are summed in double over
// fixed blocks of rows, then the blocks in order: the same bits at any thread count.
#pragma once
#include <cstdint>

#include "ops/batchnorm.h"

namespace oc::ops {

template <typename T>
void batchnorm_forward(T* out, T* mean, T* rstd, T* running_mean, T* running_var, const T* inp, const T* weight,
                       const T* bias, int64_t R, int64_t C, double eps, double momentum, bool training);
template <typename T>
void batchnorm_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, const T* mean,
                        const T* rstd, int64_t R, int64_t C, bool training);

}  // namespace oc::ops
