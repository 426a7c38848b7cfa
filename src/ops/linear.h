// nn.Linear as OpenCLIP lays it out: weight [out, in], bias [out].
#pragma once
#include <cstdint>

#include "ops/gemm.h"

namespace oc::ops {

// out[M,N] = inp[M,K] @ weight[N,K]^T + bias[N] (bias may be null).
template <typename T>
void linear_forward(T* out, const T* inp, const T* weight, const T* bias, int64_t M, int64_t K, int64_t N,
                    Prec prec = Prec::F32);

// dinp[M,K] = dout @ weight (assigned; skipped when dinp is null),
// dweight[N,K] += dout^T @ inp, dbias[N] += column sums of dout (skipped when null).
template <typename T>
void linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, int64_t M,
                     int64_t K, int64_t N, Prec prec = Prec::F32);

// A projection stored [in, out] (visual.proj, text_projection): out[M,N] = inp[M,K] @ w[K,N].
template <typename T>
void proj_forward(T* out, const T* inp, const T* w, int64_t M, int64_t K, int64_t N, Prec prec = Prec::F32);
// dinp = dout @ w^T (assigned), dw += inp^T @ dout.
template <typename T>
void proj_backward(T* dinp, T* dw, const T* dout, const T* inp, const T* w, int64_t M, int64_t K, int64_t N,
                   Prec prec = Prec::F32);

}  // namespace oc::ops
