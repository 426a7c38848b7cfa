// The CUDA backend (issue 15), built with OPENCLIP_CUDA (OPENCLIP_HAVE_CUDA is then defined).
// This header needs no CUDA headers: the registry (ops/backend.cpp) and `openclip info` use it.
// UNTESTED ON A GPU: written and compiled on a machine without one; see docs/CUDA.md.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ops/backend.h"

namespace oc::ops {

// "" when at least one GPU is visible; otherwise what is missing, e.g. "no visible GPU
// (cudaGetDeviceCount: no CUDA-capable device is detected)". Asked once per process.
const std::string& cuda_unavailable_reason();
std::unique_ptr<Backend> make_cuda_backend();  // on GPU 0

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  size_t total_bytes = 0, free_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
};
struct CudaRuntimeInfo {
  int driver_version = 0;   // cudaDriverGetVersion: 13000 = 13.0; 0 when no driver
  int runtime_version = 0;  // cudaRuntimeGetVersion
  std::vector<CudaDeviceInfo> devices;
  std::string error;        // why devices is empty
};
CudaRuntimeInfo cuda_runtime_info();

}  // namespace oc::ops
