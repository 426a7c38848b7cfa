// Launchers of the CUDA kernels of the EVA02 towers (ops/rope.h, ops/swiglu.h): device
// pointers, sizes, the backend's stream; launch errors are checked by the caller. Plain C++.
// Compile-checked only so far (no GPU run yet).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace oc::ops::cuda {

// The rotation of ops/rope.h on the q and k pairs of tokens [prefix, T); inverse: the backward.
void rope_rotate(float* qkv, const float* sincos, int64_t B, int64_t T, int64_t W, int64_t H, int64_t prefix,
                 bool inverse, cudaStream_t s);
void swiglu_forward(float* out, const float* gate, const float* x, int64_t n, cudaStream_t s);
void swiglu_backward(float* dgate, float* dx, const float* dout, const float* gate, const float* x, int64_t n,
                     cudaStream_t s);

}  // namespace oc::ops::cuda
