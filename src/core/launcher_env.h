// The environment variables a launcher sets for a process's rank on its node, in OpenCLIP's
// order (distributed.py world_info_from_env): read by dist/comm.cpp for the job's layout and
// by the CUDA backend to pick this process's GPU (ops/cuda/cuda_device.cpp), both above core.
#pragma once
#include <array>

namespace oc {

inline constexpr std::array<const char*, 4> kLocalRankVars = {"LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                                              "OMPI_COMM_WORLD_LOCAL_RANK"};

}  // namespace oc
