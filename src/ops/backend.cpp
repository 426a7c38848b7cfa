// Buffer ownership, the allocation error, and the registry of backends.
#include "ops/backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "core/check.h"
#include "core/checked.h"
#include "ops/cpu/cpu_backend.h"
#ifdef OPENCLIP_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#endif
#include "ops/ref/ref_backend.h"

namespace oc::ops {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_, ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.owner_ = nullptr, o.ptr_ = nullptr, o.bytes_ = 0;
  }
  return *this;
}

void Buffer::reset() {
  if (ptr_) owner_->release(ptr_);
  owner_ = nullptr, ptr_ = nullptr, bytes_ = 0;
}

Buffer Backend::alloc(size_t bytes, std::string_view what) {
  if (bytes == 0) return Buffer(this, nullptr, 0);
  void* p = allocate(bytes);
  if (!p)
    OC_USER_ERROR("backend {}: cannot allocate {} bytes ({:.2f} GiB) for {}{}", name(), bytes,
                  double(bytes) / double(1ull << 30), what, alloc_failure_hint(bytes));
  return Buffer(this, p, bytes);
}

Buffer Backend::alloc_floats(size_t n, std::string_view what, bool zero_it) {
  Buffer b = alloc(size_t(checked_mul(what, {int64_t(n), int64_t(sizeof(float))})), what);
  if (zero_it) zero(b.data(), b.bytes());
  return b;
}

void Backend::round_to_bf16(float* x, int64_t n) {
  constexpr int64_t kChunk = int64_t(1) << 20;  // floats: 4 MiB of host memory at a time
  std::vector<float> host(size_t(std::min(n, kChunk)));
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    copy_to_host(host.data(), x + i, sizeof(float) * size_t(m));
    oc::round_to_bf16(host.data(), host.data(), size_t(m));
    copy_from_host(x + i, host.data(), sizeof(float) * size_t(m));
  }
}

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
    v.push_back({{"cuda", why_not.empty() ? "NVIDIA GPU: cuBLASLt GEMMs, CUDA kernels (first version, docs/CUDA.md)"
                                          : why_not,
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
  // "cuda:N" names a GPU: one process per GPU, the device index comes from LOCAL_RANK (docs/CUDA.md).
  const bool cuda = device == "cuda" || device.substr(0, 5) == "cuda:";
  const std::string_view name = cuda ? std::string_view("cuda") : device;
  for (const Entry& e : entries())
    if (e.info.name == name && e.info.available) return e.info.name;
  if (cuda) {
    bool registered = false;
    for (const Entry& e : entries()) registered |= e.info.name == "cuda";
    if (!registered)
      OC_USER_ERROR("--device {}: this openclip was built without CUDA (configure with -DOPENCLIP_CUDA=ON on a "
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
