// A backend whose memory the host cannot touch, for tests of the code that must cross the
// host/backend boundary through copies (docs/ARCHITECTURE.md, "Compute backends"). Every op
// runs on `cpu`, but the buffers live in one reserved region of address space that is kept
// PROT_NONE except while one of this backend's own methods runs, and host_memory() says
// false, so the code under test takes the staging paths a device backend takes. A direct
// host read or write of its memory (a pointer from Clip::params(), an arena, a moment)
// faults: the process dies with "host code touched memory of the guarded backend" and the
// offset, which fails the test. Every op's arguments are checked against the memory contract
// of ops/op_args.h (pointers: this backend's memory; spans and Host<T>: host memory), so a
// host array handed to an op where a device backend needs its own memory is an error naming
// the op and the field. Results are bitwise those of `cpu` (the same kernels).
// One instance per thread: the protection is flipped by whoever calls.
#pragma once
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <map>
#include <span>
#include <type_traits>

#include "core/check.h"
#include "ops/op_fields.h"
#include "ops/registry.h"

namespace oc::test {

namespace guarded_detail {
struct Range {
  std::atomic<char*> begin{nullptr};
  std::atomic<size_t> size{0};
};
inline std::array<Range, 8>& ranges() {
  static std::array<Range, 8> r;
  return r;
}
inline void say(const char* s) { (void)!write(2, s, __builtin_strlen(s)); }
// Async-signal-safe: a fault inside a guarded region is reported, then the default action
// (the fault repeats once the handler returns) ends the process.
inline void on_segv(int, siginfo_t* si, void*) {
  char* a = static_cast<char*>(si->si_addr);
  for (Range& r : ranges()) {
    char* b = r.begin.load();
    if (b && a >= b && a < b + r.size.load()) {
      char hex[20];
      size_t off = size_t(a - b);
      int n = 0;
      do hex[n++] = "0123456789abcdef"[off & 15], off >>= 4;
      while (off);
      say("host code touched memory of the guarded backend (it must go through copy_to_host/copy_from_host), "
          "offset 0x");
      while (n) (void)!write(2, &hex[--n], 1);
      say("\n");
    }
  }
  signal(SIGSEGV, SIG_DFL);
}

// The host-memory fields of an op's args struct (ops/op_args.h).
template <class F>
inline constexpr bool is_host_value = false;
template <class T>
inline constexpr bool is_host_value<std::span<T>> = true;
template <class T>
inline constexpr bool is_host_value<ops::Host<T>> = true;
template <class T>
const void* host_ptr(std::span<T> s) {
  return s.data();
}
template <class T>
const void* host_ptr(ops::Host<T> h) {
  return h.get();
}
}  // namespace guarded_detail

class GuardedBackend final : public ops::Backend {
 public:
  static constexpr size_t kReserve = size_t(1) << 34;  // address space only (MAP_NORESERVE)
  static constexpr size_t kPage = 4096;

  GuardedBackend() : inner_(ops::backend("cpu")) {
    void* p = mmap(nullptr, kReserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    OC_CHECK(p != MAP_FAILED, "cannot reserve {} bytes of address space", kReserve);
    base_ = static_cast<char*>(p);
    bool slot = false;
    for (auto& r : guarded_detail::ranges())
      if (!slot && !r.begin.load()) r.size = kReserve, r.begin = base_, slot = true;
    OC_CHECK(slot, "too many guarded backends");
    struct sigaction sa {};
    sa.sa_sigaction = guarded_detail::on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, nullptr);
  }
  // Never destroyed in the tests (buffers of a backend must not outlive it): see guarded().
  ~GuardedBackend() override = default;

  std::string_view name() const override { return "guarded"; }
  bool host_memory() const override { return false; }
  // Bytes of the region in use (allocations are page-rounded and never reused).
  size_t used() const { return used_; }

  // ---- memory: each call opens the region for itself only --------------------------
  void zero(void* dst, size_t bytes) override {
    Open o(*this);
    inner_.zero(dst, bytes);
  }
  void fill(float* dst, int64_t n, float v) override {
    Open o(*this);
    inner_.fill(dst, n, v);
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    Open o(*this);
    inner_.copy_from_host(dst, src, bytes);
    ++copies_from_host_;
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    Open o(*this);
    inner_.copy_to_host(dst, src, bytes);
    ++copies_to_host_;
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    Open o(*this);
    inner_.copy(dst, src, bytes);
  }
  float read_scalar(const float* p) override {
    Open o(*this);
    return inner_.read_scalar(p);
  }
  void write_scalar(float* p, float v) override {
    Open o(*this);
    inner_.write_scalar(p, v);
  }
  void synchronize() override {}
  int64_t copies_to_host() const { return copies_to_host_; }
  int64_t copies_from_host() const { return copies_from_host_; }

  // ---- ops: cpu's, with the region open, after checking every argument's memory ---------
  // Every op of ops/op_list.h (generated: a new op needs no line here).
#define OC_GUARDED_RUN(A)                                  \
  ops::op_result_t<ops::A> run(const ops::A& a) override { \
    check_memory(a, #A);                                   \
    Open o(*this);                                         \
    return inner_.run(a);                                  \
  }
  OC_OPS(OC_GUARDED_RUN)
#undef OC_GUARDED_RUN
  // prepare/release_weight_bf16: Backend's defaults (nothing kept). The fp32 and conv ones go to the
  // inner backend (it reads W, in this backend's memory), so inference runs the cpu backend's
  // kernels bitwise.
  void prepare_weight_f32(const float* W, int64_t N, int64_t K) override {
    Open o(*this);
    inner_.prepare_weight_f32(W, N, K);
  }
  void release_weight_f32(const float* W) override { inner_.release_weight_f32(W); }
  void prepare_conv_weight(const float* W, int64_t size) override {
    Open o(*this);
    inner_.prepare_conv_weight(W, size);
  }
  void release_conv_weight(const float* W) override { inner_.release_conv_weight(W); }

  // Whether p points into a live allocation of this backend.
  bool owns(const void* p) const {
    const char* c = static_cast<const char*>(p);
    auto it = sizes_.upper_bound(const_cast<char*>(c));
    if (it == sizes_.begin()) return false;
    --it;
    return c < it->first + it->second;
  }
  bool in_region(const void* p) const {
    const char* c = static_cast<const char*>(p);
    return c >= base_ && c < base_ + kReserve;
  }

 protected:
  void* allocate(size_t bytes) override {
    const size_t n = (bytes + kPage - 1) / kPage * kPage;
    if (used_ + n > kReserve) return nullptr;
    char* p = base_ + used_;
    used_ += n;
    sizes_[p] = n;
    if (depth_ > 0) mprotect(p, n, PROT_READ | PROT_WRITE);
    return p;
  }
  void release(void* p) override {
    auto it = sizes_.find(static_cast<char*>(p));
    OC_CHECK(it != sizes_.end(), "guarded backend: release of {} it did not allocate", p);
    madvise(p, it->second, MADV_DONTNEED);  // the pages go back; the addresses are not reused
    sizes_.erase(it);
  }

 private:
  // The memory contract of ops/op_args.h: a raw pointer is null or memory of this backend; a
  // host array (std::span) or host scalar (ops::Host) is not. Field i counts from 0 in the
  // args struct's declaration order.
  template <class A>
  void check_memory(const A& a, const char* op) const {
    int i = 0;
    ops::for_each_field(a, [&](const auto& f) {
      using F = std::decay_t<decltype(f)>;
      if constexpr (std::is_pointer_v<F>) {
        OC_CHECK(!f || owns(f),
                 "guarded backend: {} field {} = {} is not memory of this backend (host data "
                 "must be uploaded with copy_from_host)",
                 op, i, static_cast<const void*>(f));
      } else if constexpr (guarded_detail::is_host_value<F>) {
        OC_CHECK(!in_region(guarded_detail::host_ptr(f)),
                 "guarded backend: {} field {} is a host value but points into "
                 "the backend's memory",
                 op, i);
      }
      ++i;
    });
  }
  struct Open {
    explicit Open(GuardedBackend& b) : b_(b) {
      if (b_.depth_++ == 0) b_.protect(PROT_READ | PROT_WRITE);
    }
    ~Open() {
      if (--b_.depth_ == 0) b_.protect(PROT_NONE);
    }
    GuardedBackend& b_;
  };
  void protect(int prot) {
    if (used_) OC_CHECK(mprotect(base_, used_, prot) == 0, "mprotect of the guarded region failed");
  }
  ops::Backend& inner_;
  char* base_ = nullptr;
  size_t used_ = 0;
  int depth_ = 0;
  std::map<char*, size_t> sizes_;
  int64_t copies_to_host_ = 0, copies_from_host_ = 0;
};

// Guarded backend number i (0..3), created on first use and never destroyed, so buffers of
// objects that outlive a test stay valid.
inline GuardedBackend& guarded(int i = 0) {
  static std::array<GuardedBackend*, 4> b{};
  OC_CHECK(i >= 0 && i < 4, "guarded backend {}", i);
  if (!b[size_t(i)]) b[size_t(i)] = new GuardedBackend;
  return *b[size_t(i)];
}

}  // namespace oc::test
