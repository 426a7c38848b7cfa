// Whether a GPU is visible, which one this process uses, and what `openclip info` says about
// each one.
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "core/launcher_env.h"
#include "ops/cuda/cuda_backend.h"

namespace oc::ops {

namespace {
std::atomic<int> g_chosen{-1};   // --device cuda:N
std::atomic<int> g_in_use{-1};   // the GPU the first backend of this process took
}  // namespace

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

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

void set_cuda_device(int index) {
  const int n = cuda_device_count();
  if (index < 0 || index >= n)
    OC_USER_ERROR("--device cuda:{}: this machine has {} visible GPU{} (cuda:0{}); CUDA_VISIBLE_DEVICES={}", index, n,
                  n == 1 ? "" : "s", n > 1 ? fmt::format(" .. cuda:{}", n - 1) : "",
                  std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
  const int used = g_in_use.load();
  if (used >= 0 && used != index)
    OC_USER_ERROR("--device cuda:{}: this process already runs its cuda backend on GPU {} (one GPU per process)",
                  index, used);
  g_chosen = index;
}

int cuda_device_index() {
  int d = g_chosen.load();
  if (d < 0) {
    const int n = cuda_device_count();
    d = 0;
    for (const char* name : kLocalRankVars)
      if (const char* v = std::getenv(name); v && *v) {
        d = n > 0 ? std::atoi(v) % n : 0;  // several ranks per GPU (tests) share it
        break;
      }
  }
  int expected = -1;
  g_in_use.compare_exchange_strong(expected, d);
  return d;
}

bool cuda_allow_tf32() {
  const char* v = std::getenv("OPENCLIP_ALLOW_TF32");
  return v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0);
}

double cuda_bf16_peak_flops(const CudaDeviceInfo& d) {
  const std::string& n = d.name;
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("H200") || (has("H100") && (has("SXM") || has("HBM3")))) return 989e12;
  if (has("H100") && has("NVL")) return 835e12;
  if (has("H100")) return 756e12;  // PCIe
  if (has("GH200")) return 989e12;
  if (has("A100")) return 312e12;
  if (has("L40S")) return 362e12;
  if (has("A10G") || has("A10 ")) return 125e12;
  return 0.0;
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
  int current = 0;
  cudaGetDevice(&current);
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    CudaDeviceInfo d;
    d.index = i, d.name = p.name, d.total_bytes = p.totalGlobalMem;
    d.cc_major = p.major, d.cc_minor = p.minor, d.sm_count = p.multiProcessorCount;
    cudaDeviceGetAttribute(&d.clock_khz, cudaDevAttrClockRate, i);
    if (cudaSetDevice(i) == cudaSuccess) {
      size_t free_b = 0, total_b = 0;
      if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) d.free_bytes = free_b;
    }
    r.devices.push_back(d);
  }
  if (n > 0) cudaSetDevice(current);  // leave the process's device as it was
  return r;
}

}  // namespace oc::ops
