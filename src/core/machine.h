// What this machine is: CPU model, cores, ISA extensions that matter for the kernels,
// memory. Used by `openclip info` and recorded next to every benchmark figure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace oc {

struct MachineInfo {
  std::string cpu_model;
  int logical_cpus = 0;      // online logical CPUs
  int usable_threads = 0;    // OpenMP threads this process will use
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512_vnni = false,
       avx512_bf16 = false, amx_tile = false, amx_bf16 = false, amx_int8 = false, avx_vnni = false;
  int64_t mem_total_bytes = 0, mem_available_bytes = 0;
  std::string hostname;
};

MachineInfo machine_info();
std::string hostname();

// Where the vocabulary and zero-shot metadata live: $OPENCLIP_DATA_DIR, else the folder the
// setup script installs to (compile-time OPENCLIP_DATA_DIR), else <exe>/../share/openclip.
std::vector<std::string> data_dirs();
// First existing data_dirs()/<name>, or "" (callers say where they looked).
std::string find_data_file(const std::string& name);

}  // namespace oc
