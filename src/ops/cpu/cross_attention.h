// The CPU cross-attention kernels (contract: ops/cross_attention.h), templates for float
// (training) and double (finite-difference checks), softmax in the op's type.
#pragma once
#include <cstdint>

#include "ops/cross_attention.h"

namespace oc::ops {

template <typename T>
void cross_attention_forward(T* out, T* att, const T* q, const T* k, const T* v, int64_t ldq, int64_t ldk, int64_t ldv,
                             int64_t B, int64_t Tq, int64_t Tk, int64_t C, int64_t H, Prec prec = Prec::F32);
template <typename T>
void cross_attention_backward(T* dq, T* dk, T* dv, T* scratch, const T* dout, const T* q, const T* k, const T* v,
                              const T* att, int64_t ldq, int64_t ldk, int64_t ldv, int64_t B, int64_t Tq, int64_t Tk,
                              int64_t C, int64_t H, Prec prec = Prec::F32);

}  // namespace oc::ops
