// The registry of backends (ops/registry.h).
#include "ops/registry.h"

#include <map>
#include <mutex>

#include "core/check.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/dnnl_info.h"
#ifdef OPENCLIP_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#endif
#include "ops/ref/ref_backend.h"

namespace oc::ops {

namespace {

struct Entry {
  BackendInfo info;
  std::unique_ptr<Backend> (*make)();
};

// The build's backends. An explicit table rather than static self-registration: objects of
// a static library that nothing references are dropped by the linker, and with them their
// registrars. A CUDA build adds "cuda", available when a GPU is visible at run time.
const std::vector<Entry>& entries() {
  static const std::vector<Entry> e = [] {
    std::vector<Entry> v = {
        {{"ref", "reference: plain loops, sums in double (the tests' reference)", true}, make_ref_backend},
        {{"cpu", "fast: oneDNN (" + dnnl_isa() + "), AVX2/AVX-512 kernels, OpenMP", true}, make_cpu_backend},
    };
#ifdef OPENCLIP_HAVE_CUDA
    const std::string& why_not = cuda_unavailable_reason();
    v.push_back(
        {{"cuda", why_not.empty() ? "NVIDIA GPU: cuBLASLt GEMMs, CUDA kernels (first version, docs/CUDA.md)" : why_not,
          why_not.empty()},
         make_cuda_backend});
#endif
    return v;
  }();
  return e;
}

std::string available_names() {
  std::string s;
  for (const Entry& e : entries())
    if (e.info.available) s += (s.empty() ? "" : ", ") + e.info.name;
  return s;
}

}  // namespace

std::vector<BackendInfo> backend_list() {
  std::vector<BackendInfo> v;
  for (const Entry& e : entries()) v.push_back(e.info);
  return v;
}

std::unique_ptr<Backend> make_backend(std::string_view name) {
  for (const Entry& e : entries()) {
    if (e.info.name != name) continue;
    if (!e.info.available)
      OC_USER_ERROR("device '{}' is not available here ({}); available: {}", name, e.info.description,
                    available_names());
    return e.make();
  }
  OC_USER_ERROR("unknown device '{}'; available: {}", name, available_names());
}

std::string resolve_device(std::string_view device) {
  // "cuda:N" selects the cuda backend on GPU N (one GPU per process: docs/CUDA.md); plain
  // "cuda" the launcher's local rank (ops/cuda/cuda_backend.h, cuda_device_index).
  const bool cuda = device == "cuda" || device.substr(0, 5) == "cuda:";
  if (cuda && device.size() > 5) {
    const std::string_view n = device.substr(5);
    if (n.find_first_not_of("0123456789") != std::string_view::npos || n.size() > 4)
      OC_USER_ERROR("--device {}: expected cuda or cuda:N with N a GPU index (0, 1, ...)", device);
#ifdef OPENCLIP_HAVE_CUDA
    if (cuda_unavailable_reason().empty()) set_cuda_device(std::stoi(std::string(n)));
#endif
  }
  const std::string_view name = cuda ? std::string_view("cuda") : device;
  for (const Entry& e : entries())
    if (e.info.name == name && e.info.available) return e.info.name;
  if (cuda) {
    bool registered = false;
    for (const Entry& e : entries()) registered |= e.info.name == "cuda";
    if (!registered)
      OC_USER_ERROR(
          "--device {}: this openclip was built without CUDA (configure with -DOPENCLIP_CUDA=ON on a "
          "machine with the CUDA toolkit; docs/CUDA.md); available: {}",
          device, available_names());
  }
  make_backend(name);  // throws: unknown or unavailable ("no visible GPU ..."), listing the available ones
  return std::string(name);
}

Backend& backend(std::string_view name) {
  static std::mutex mu;
  // Leaked on purpose: buffers of static objects may be freed after main returns.
  static auto* instances = new std::map<std::string, std::unique_ptr<Backend>, std::less<>>;
  std::lock_guard<std::mutex> lock(mu);
  auto it = instances->find(name);
  if (it == instances->end()) it = instances->emplace(std::string(name), make_backend(name)).first;
  return *it->second;
}

Backend& default_backend() {
  static Backend& b = backend("cpu");
  return b;
}

}  // namespace oc::ops
