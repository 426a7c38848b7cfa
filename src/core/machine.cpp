#include "core/machine.h"

#include <cpuid.h>
#include <unistd.h>

#include <cstdlib>
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
  if (__get_cpuid_count(1, 0, &a, &b, &c, &d)) {
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
