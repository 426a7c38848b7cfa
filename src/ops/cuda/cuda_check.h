// Error checks for CUDA runtime and cuBLASLt calls: an oc::Error with file:line, the call and
// the library's message.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "core/check.h"

#define OC_CUDA_CHECK(x)                                                                  \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    OC_CHECK(e_ == cudaSuccess, "{} failed: {} ({})", #x, cudaGetErrorString(e_), int(e_)); \
  } while (0)
#define OC_CUBLAS_CHECK(x)                                                                \
  do {                                                                                    \
    cublasStatus_t s_ = (x);                                                              \
    OC_CHECK(s_ == CUBLAS_STATUS_SUCCESS, "{} failed: cuBLAS status {}", #x, int(s_));     \
  } while (0)
