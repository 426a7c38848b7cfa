// The CPU kernels of EVA02's rotary embedding (contract: ops/rope.h) and SwiGLU gate
// (ops/swiglu.h); templates for float and double (the gradient checks).
#pragma once
#include <cstdint>

#include "ops/rope.h"
#include "ops/swiglu.h"

namespace oc::ops {

// Rotates the q and k head pairs of tokens [prefix, T) of qkv [B, T, 3W] by the table's angles
// (inverse = false: the forward) or back (inverse = true: the backward, on the gradient).
template <typename T>
void rope_rotate(T* qkv, const T* sincos, int64_t B, int64_t Tn, int64_t W, int64_t H, int64_t prefix, bool inverse);
template <typename T>
void swiglu_forward(T* out, const T* gate, const T* x, int64_t n);
template <typename T>
void swiglu_backward(T* dgate, T* dx, const T* dout, const T* gate, const T* x, int64_t n);

}  // namespace oc::ops
