#include "core/machine.h"

#include <cpuid.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/fs.h"
#include "core/parallel.h"

namespace oc {

namespace {
bool xgetbv_ok(uint64_t mask) {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return ((uint64_t(edx) << 32 | eax) & mask) == mask;
}
}  // namespace

std::string cpu_uarch(const std::string& vendor, int family, int model) {
  if (vendor == "AuthenticAMD") {
    if (family == 0x17) return model >= 0x30 ? "Zen 2" : "Zen";
    if (family == 0x19)  // Zen 4: Genoa 0x10-0x1f, Raphael/Phoenix 0x60-0x7f, Bergamo 0xa0-0xaf
      return (model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0xaf) ? "Zen 4" : "Zen 3";
    if (family == 0x1a) return "Zen 5";  // Turin 0x02/0x11, Granite Ridge 0x44, Strix 0x20-0x2f
  }
  if (vendor == "GenuineIntel" && family == 6) {
    switch (model) {
      case 0x55: return "Skylake-SP/Cascade Lake";
      case 0x6a: case 0x6c: return "Ice Lake-SP";
      case 0x8f: return "Sapphire Rapids";
      case 0xcf: return "Emerald Rapids";
      case 0xad: case 0xae: return "Granite Rapids";
      case 0xaf: return "Sierra Forest";
      default: break;
    }
  }
  return "";
}

std::string cpu_kind(const MachineInfo& m) {
  const char* isa = m.amx_bf16 ? "AMX-BF16" : m.avx512_bf16 ? "AVX512-BF16, no AMX" : m.avx512f ? "AVX-512, no BF16"
                  : m.avx2 ? "AVX2 only" : "no AVX2";
  std::string id = "family " + std::to_string(m.family) + " model " + std::to_string(m.model);
  return m.cpu_model + " (" + (m.uarch.empty() ? id : m.uarch + ", " + id) + "; " + isa + ")";
}

std::string hostname() {
  char buf[256] = {0};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

MachineInfo machine_info() {
  MachineInfo m;
  m.logical_cpus = int(::sysconf(_SC_NPROCESSORS_ONLN));
  m.usable_threads = num_threads();
  m.hostname = hostname();
  std::ifstream cpu("/proc/cpuinfo");
  for (std::string line; std::getline(cpu, line);) {
    if (line.rfind("model name", 0) == 0) {
      m.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  unsigned a, b, c, d;
  if (__get_cpuid_count(0, 0, &a, &b, &c, &d)) {
    char v[13] = {0};
    std::memcpy(v, &b, 4), std::memcpy(v + 4, &d, 4), std::memcpy(v + 8, &c, 4);
    m.vendor = v;
  }
  if (__get_cpuid_count(1, 0, &a, &b, &c, &d)) {
    // Display family/model (Intel SDM vol. 2A, CPUID leaf 1; AMD uses the same rule).
    const int base_family = int(a >> 8) & 0xf, base_model = int(a >> 4) & 0xf;
    m.family = base_family == 0xf ? base_family + (int(a >> 20) & 0xff) : base_family;
    m.model = base_family == 0xf || base_family == 0x6 ? base_model + ((int(a >> 16) & 0xf) << 4) : base_model;
    m.uarch = cpu_uarch(m.vendor, m.family, m.model);
    const bool osxsave = c & (1u << 27);
    const bool ymm = osxsave && xgetbv_ok(0x6);
    const bool zmm = osxsave && xgetbv_ok(0xe6);
    const bool amx = osxsave && xgetbv_ok(0x60000);
    m.fma = ymm && (c & (1u << 12));
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
      m.avx2 = ymm && (b & (1u << 5));
      m.avx512f = zmm && (b & (1u << 16));
      m.avx512bw = zmm && (b & (1u << 30));
      m.avx512_vnni = zmm && (c & (1u << 11));
      m.amx_bf16 = amx && (d & (1u << 22));
      m.amx_tile = amx && (d & (1u << 24));
      m.amx_int8 = amx && (d & (1u << 25));
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
      m.avx512_bf16 = zmm && (a & (1u << 5));
      m.avx_vnni = ymm && (a & (1u << 4));
    }
  }
  std::ifstream mem("/proc/meminfo");
  for (std::string key; mem >> key;) {
    int64_t kb = 0;
    mem >> kb;
    if (key == "MemTotal:") m.mem_total_bytes = kb * 1024;
    if (key == "MemAvailable:") m.mem_available_bytes = kb * 1024;
    std::string rest;
    std::getline(mem, rest);
  }
  return m;
}

// Search order (machine.h), with the configured install prefix's share/openclip (`cmake
// --install`) before the executable-relative one, which serves a relocated installed binary.
std::vector<std::string> data_dirs() {
  std::vector<std::string> dirs;
  if (const char* e = std::getenv("OPENCLIP_DATA_DIR"); e && *e) dirs.push_back(e);
  dirs.push_back(OPENCLIP_DATA_DIR);
#ifdef OPENCLIP_INSTALL_DATA_DIR
  dirs.push_back(OPENCLIP_INSTALL_DATA_DIR);  // <prefix>/share/openclip of `cmake --install`
#endif
  char exe[4096] = {0};
  if (::readlink("/proc/self/exe", exe, sizeof exe - 1) > 0)
    dirs.push_back(fs::join(fs::dirname(fs::dirname(exe)), "share/openclip"));
  return dirs;
}

std::string find_data_file(const std::string& name) {
  for (auto& d : data_dirs()) {
    std::string p = fs::join(d, name);
    if (fs::exists(p)) return p;
  }
  return "";
}

}  // namespace oc
