// The CUDA backend (issue 15), built with OPENCLIP_CUDA (OPENCLIP_HAVE_CUDA is then defined).
// This header needs no CUDA headers: the registry (ops/backend.cpp) and `openclip info` use it.
// Written without a GPU; first ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ops/backend.h"

namespace oc::ops {

// "" when at least one GPU is visible; otherwise what is missing, e.g. "no visible GPU
// (cudaGetDeviceCount: no CUDA-capable device is detected)". Asked once per process.
const std::string& cuda_unavailable_reason();
// A new backend on the process's GPU (cuda_device_index()).
std::unique_ptr<Backend> make_cuda_backend();

// The GPU of this process: the N of `--device cuda:N` (set_cuda_device, called by
// resolve_device; N must be below the visible count), else the local rank of the launcher
// (LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK: one process per GPU)
// modulo the visible count, else 0. Throws when the process's cuda backend already exists on
// another GPU.
void set_cuda_device(int index);
int cuda_device_index();
int cuda_device_count();  // visible GPUs (0 when none or no driver)
// OPENCLIP_ALLOW_TF32=1: fp32 GEMMs may use TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32).
bool cuda_allow_tf32();

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  size_t total_bytes = 0, free_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int clock_khz = 0;  // cudaDevAttrClockRate (peak SM clock)
};
// The card's dense bf16 tensor-core peak in FLOP/s (MFU's denominator): a table by name for
// the data-centre cards (H200/H100 SXM 989e12, H100 PCIe 756e12, A100 312e12, L40S 362e12),
// else 0 (unknown: MFU is not reported).
double cuda_bf16_peak_flops(const CudaDeviceInfo& d);
struct CudaRuntimeInfo {
  int driver_version = 0;   // cudaDriverGetVersion: 13000 = 13.0; 0 when no driver
  int runtime_version = 0;  // cudaRuntimeGetVersion
  std::vector<CudaDeviceInfo> devices;
  std::string error;        // why devices is empty
};
CudaRuntimeInfo cuda_runtime_info();

}  // namespace oc::ops
