// Whether a GPU is visible, and what `openclip info` says about each one.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "ops/cuda/cuda_backend.h"

namespace oc::ops {

const std::string& cuda_unavailable_reason() {
  static const std::string why = [] {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess)
      return fmt::format("no visible GPU (cudaGetDeviceCount: {}); this build has CUDA", cudaGetErrorString(e));
    if (n == 0) return std::string("no visible GPU (cudaGetDeviceCount: 0 devices); this build has CUDA");
    return std::string();
  }();
  return why;
}

CudaRuntimeInfo cuda_runtime_info() {
  CudaRuntimeInfo r;
  cudaDriverGetVersion(&r.driver_version);
  cudaRuntimeGetVersion(&r.runtime_version);
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    r.error = fmt::format("no visible GPU ({})", cudaGetErrorString(e));
    return r;
  }
  if (n == 0) r.error = "no visible GPU";
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    CudaDeviceInfo d;
    d.index = i, d.name = p.name, d.total_bytes = p.totalGlobalMem;
    d.cc_major = p.major, d.cc_minor = p.minor, d.sm_count = p.multiProcessorCount;
    if (cudaSetDevice(i) == cudaSuccess) {
      size_t free_b = 0, total_b = 0;
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) d.free_bytes = free_b;
    }
    r.devices.push_back(d);
  }
  return r;
}

}  // namespace oc::ops
