// The compute backend, chosen at run time (--device; ops/registry.h): it owns its memory and
// runs the op set, forward and backward. `ref` (ops/ref: plain loops, the reference every
// other backend is tested against) and `cpu` (ops/cpu: oneDNN, AVX2/AVX-512 kernels) are
// always registered; `cuda` (ops/cuda) where the build found nvcc and a GPU is visible.
//
// Each op is one `run` overload taking the op's args struct (ops/<family>.h: the contract),
// generated from the op list (ops/op_list.h): be.run(GemmArgs{.ta = false, ...}). The
// pointers in an args struct must come from buffers this backend allocated (alloc()), so a
// device backend receives device pointers; host values are typed as such (std::span, Host<T>:
// ops/op_args.h). Host code never dereferences backend memory: it crosses the boundary with
// copy_from_host / copy_to_host / read_scalar / write_scalar. The `ref` and `cpu` backends
// both keep their memory on the host (host_memory()), so their buffers may be passed to either.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/bf16.h"
#include "core/host_alloc.h"
#include "ops/op_list.h"

namespace oc::ops {

class Backend;
Backend& default_backend();  // "cpu" (ops/registry.h)

// Memory owned by one backend (RAII, move-only): freed through its backend, which must
// outlive it. 64-byte aligned.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }
  void reset();

  void* data() { return ptr_; }
  const void* data() const { return ptr_; }
  float* f32() { return static_cast<float*>(ptr_); }
  const float* f32() const { return static_cast<const float*>(ptr_); }
  bf16* b16() { return static_cast<bf16*>(ptr_); }
  size_t bytes() const { return bytes_; }
  size_t floats() const { return bytes_ / sizeof(float); }
  double mib() const { return double(bytes_) / (1 << 20); }
  Backend* backend() const { return owner_; }

 private:
  friend class Backend;
  Buffer(Backend* owner, void* p, size_t bytes) : owner_(owner), ptr_(p), bytes_(bytes) {}
  Backend* owner_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Host bytes uploaded into backend memory ahead of the ops that read them (Backend::prefetch:
// the trainer starts the next step's image upload while the current step runs; docs/CUDA.md,
// "Batches"). Move-only. data() is memory of the backend (on a host-memory backend the host
// bytes themselves: nothing is copied), to be read by ops queued after Backend::await(*this).
// The host source must stay unchanged until the handle is gone: reset() (the destructor)
// waits for the copy, and marks the backend memory free once the ops queued so far have read it.
class Prefetch {
 public:
  Prefetch() = default;
  Prefetch(Prefetch&& o) noexcept { *this = std::move(o); }
  Prefetch& operator=(Prefetch&& o) noexcept;
  Prefetch(const Prefetch&) = delete;
  Prefetch& operator=(const Prefetch&) = delete;
  ~Prefetch() { reset(); }
  void reset() noexcept;

  const void* data() const { return data_; }
  const float* f32() const { return static_cast<const float*>(data_); }
  size_t bytes() const { return bytes_; }
  Backend* backend() const { return owner_; }

 private:
  friend class Backend;
  Backend* owner_ = nullptr;
  const void* data_ = nullptr;
  size_t bytes_ = 0;
  int slot_ = -1;  // the backend's bookkeeping (cuda: its upload slot); -1 when it keeps none
  Buffer copy_;    // the default prefetch's copy (a device backend without its own)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  // Whether buffers are ordinary host memory (ref, cpu): host code may then hand them to
  // host-side code (loaders, MPI) directly; a device backend says false.
  virtual bool host_memory() const = 0;

  // ---- memory -----------------------------------------------------------------------
  // `what` names the request for the error when it cannot be met: "<config> training
  // activations, batch 256". Throws oc::Error with the bytes asked for.
  Buffer alloc(size_t bytes, std::string_view what);
  // alloc + zero, in floats.
  Buffer alloc_floats(size_t n, std::string_view what, bool zero = true);
  virtual void zero(void* dst, size_t bytes) = 0;
  virtual void fill(float* dst, int64_t n, float v) = 0;
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;  // within this backend
  virtual float read_scalar(const float* p) = 0;
  virtual void write_scalar(float* p, float v) = 0;
  virtual void synchronize() = 0;  // no-op on the host backends
  // The stream a device backend runs its ops on in order (a cudaStream_t on cuda), for work
  // that must follow them, such as a communicator's collectives; null on the host backends.
  virtual void* device_stream() { return nullptr; }

  // ---- batches (docs/CUDA.md, "Batches") ---------------------------------------------
  // Where host buffers this backend will read often should live (the loader's batches):
  // pinned memory on cuda (its copies then run asynchronously, without staging), plain heap
  // memory on the host backends. Lives for the whole process (buffers may outlive backends).
  virtual HostAllocator& host_allocator() { return plain_host_allocator(); }
  // Starts uploading `bytes` of host memory; `what` names it in an allocation error. cuda
  // copies on a second stream, after the ops that read the last upload into the same device
  // buffer, so the copy overlaps the ops queued before it. The default: a host-memory
  // backend hands back the host bytes in place; another one copies them into a buffer of its
  // own now (alloc + copy_from_host).
  virtual Prefetch prefetch(const void* host, size_t bytes, std::string_view what);
  // Ops queued after this call see the prefetched bytes (cuda: the ops stream waits for the
  // copy's event; the host does not wait). Nothing to do where prefetch copied synchronously;
  // an error for a prefetch of another backend.
  void await(const Prefetch& p);
  // fp32 GEMMs may round their inputs to TF32 on tensor cores (--allow-tf32; what OpenCLIP's
  // main.py always sets on CUDA). The host backends have no TF32: a no-op there.
  virtual void set_allow_tf32(bool /*on*/) {}

  // ---- ops: one overload per entry of ops/op_list.h ----------------------------------
#define OC_BACKEND_RUN(A) virtual op_result_t<A> run(const A& a) = 0;
  OC_OPS(OC_BACKEND_RUN)
#undef OC_BACKEND_RUN

  // A GEMM weight W [N, K] that the next GemmBf16 / GemmBf16ToBf16 runs read as B (tb,
  // ldb == K) until W changes: the backend may keep it in a faster layout (oneDNN's blocked
  // AMX layout on cpu). Prepare again after writing W; release before W is written by
  // anything else or freed. The default keeps nothing.
  virtual void prepare_weight_bf16(const bf16* /*W*/, int64_t /*N*/, int64_t /*K*/) {}
  virtual void release_weight_bf16(const bf16* /*W*/) {}
  // The same for an fp32 weight W [N, K] that the next LinearForward runs read (fp32 inference:
  // a GEMM on a plain weight repacks it on every call, most of the cost at a few rows).
  virtual void prepare_weight_f32(const float* /*W*/, int64_t /*N*/, int64_t /*K*/) {}
  virtual void release_weight_f32(const float* /*W*/) {}
  // The same for a convolution weight W [OC, C, K, K] (OIHW) that the next Conv2dForward runs
  // read (inference: the backend may keep it reordered into its convolutions' layout, in the
  // precisions they ask for, instead of reordering it on every call).
  virtual void prepare_conv_weight(const float* /*W*/, int64_t /*size*/) {}
  virtual void release_conv_weight(const float* /*W*/) {}

 protected:
  // nullptr when the memory cannot be had; alloc() turns that into the error, followed by
  // alloc_failure_hint() (a device backend says how much is free and what to try).
  virtual void* allocate(size_t bytes) = 0;
  virtual std::string alloc_failure_hint(size_t /*bytes*/) { return ""; }
  virtual void release(void* p) = 0;
  friend class Buffer;
  // A device backend's own prefetch: its handle, and the hook its reset() calls (once per
  // handle that carries a slot; must not throw).
  Prefetch make_prefetch(const void* data, size_t bytes, int slot);
  virtual void await_prefetch(int /*slot*/) {}  // await() of a handle with a slot
  virtual void end_prefetch(int /*slot*/) noexcept {}
  friend class Prefetch;
};

// An fp32 arena in the memory of one backend (resize, data, size, zero, mib), so the
// model's and optimizer's arenas come from their backend. `what` (set with bind) names it
// in the error when an allocation fails: "ViT-B-32 vision activations, batch 256".
class FloatArena {
 public:
  void bind(Backend& be, std::string what) { be_ = &be, what_ = std::move(what); }
  void resize(size_t n, bool zero = true) {
    buf_.reset();
    buf_ = be_->alloc_floats(n, what_, zero);
    size_ = n;
  }
  void zero() { be_->zero(buf_.data(), size_ * sizeof(float)); }
  float* data() { return buf_.f32(); }
  const float* data() const { return buf_.f32(); }
  size_t size() const { return size_; }
  double mib() const { return double(size_) * sizeof(float) / (1 << 20); }
  Backend& backend() const { return *be_; }

 private:
  Backend* be_ = &default_backend();
  std::string what_ = "an fp32 arena";
  Buffer buf_;
  size_t size_ = 0;
};

// *p += v for one float of backend memory (a gradient scalar such as logit_scale's).
inline void add_scalar(Backend& be, float* p, float v) { be.write_scalar(p, be.read_scalar(p) + v); }

}  // namespace oc::ops
