// What this machine is: CPU model, cores, ISA extensions that matter for the kernels,
// memory. Used by `openclip info` and recorded next to every benchmark figure.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace oc {

struct MachineInfo {
  std::string cpu_model;     // /proc/cpuinfo "model name" (a VM may show only "AMD EPYC")
  std::string vendor;        // CPUID vendor: "AuthenticAMD", "GenuineIntel", ...
  int family = 0, model = 0; // CPUID display family and model (extended fields folded in)
  std::string uarch;         // "Zen 5", "Sapphire Rapids", ... from vendor/family/model; "" if unknown
  int logical_cpus = 0;      // online logical CPUs
  int usable_threads = 0;    // OpenMP threads this process will use
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512_vnni = false,
       avx512_bf16 = false, amx_tile = false, amx_bf16 = false, amx_int8 = false, avx_vnni = false;
  int64_t mem_total_bytes = 0, mem_available_bytes = 0;
  std::string hostname;
};

MachineInfo machine_info();
std::string hostname();
// The microarchitecture for a CPUID vendor, family and model ("" when not in the table):
// what the figures depend on when a VM shows only "AMD EPYC".
std::string cpu_uarch(const std::string& vendor, int family, int model);
// The CPU kind every figure is recorded with: model name, microarchitecture and the widest
// matrix ISA, e.g. "AMD EPYC (Zen 5, family 26 model 2; AVX512-BF16, no AMX)".
std::string cpu_kind(const MachineInfo& m);

// Where the vocabulary and zero-shot metadata live: $OPENCLIP_DATA_DIR, else the folder the
// setup script installs to (compile-time OPENCLIP_DATA_DIR), else <exe>/../share/openclip.
std::vector<std::string> data_dirs();
// First existing data_dirs()/<name>, or "" (callers say where they looked).
std::string find_data_file(const std::string& name);

}  // namespace oc
