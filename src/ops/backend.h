// The compute backend, chosen at run time (--device): it owns its memory and implements the
// op set, forward and backward. `ref` (ops/ref: plain loops, the reference every other
// backend is tested against) and `cpu` (ops/cpu: oneDNN, AVX2/AVX-512 kernels) are always
// registered; `cuda` (the next issue) will register beside them.
//
// Ops keep the raw-pointer-plus-sizes signatures of the free functions in ops/*.h (llm.c's
// CUDA trainer does the same with device pointers): the pointers must come from buffers
// this backend allocated (alloc()), so a device backend receives device pointers. Host code
// never dereferences them: it crosses the boundary with copy_from_host / copy_to_host /
// read_scalar / write_scalar. The `ref` and `cpu` backends both keep their memory on the
// host (host_memory()), so their buffers may be passed to either.
//
// Conventions are those of ops/README.md: outputs first, parameter gradients accumulate,
// activation gradients are assigned unless the comment in ops/<op>.h says otherwise; each
// method's contract is the comment on the free function of the same name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/bf16.h"
#include "ops/activation.h"
#include "ops/adamw.h"
#include "ops/bf16_gemm.h"
#include "ops/gemm.h"

namespace oc::ops {

class Backend;
Backend& default_backend();  // "cpu" (registry, below)

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

  // ---- dense ------------------------------------------------------------------------
  virtual void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc, Prec prec = Prec::F32) = 0;
  virtual void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                            const float* A, int64_t lda, int64_t stride_a, const float* B, int64_t ldb,
                            int64_t stride_b, float beta, float* C, int64_t ldc, int64_t stride_c,
                            Prec prec = Prec::F32) = 0;
  virtual void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M,
                              int64_t K, int64_t N, Prec prec = Prec::F32) = 0;
  virtual void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, int64_t M, int64_t K, int64_t N, Prec prec = Prec::F32) = 0;
  virtual void proj_forward(float* out, const float* inp, const float* w, int64_t M, int64_t K, int64_t N,
                            Prec prec = Prec::F32) = 0;
  virtual void proj_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int64_t M,
                             int64_t K, int64_t N, Prec prec = Prec::F32) = 0;

  // ---- normalization, activation, residual -------------------------------------------
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                 const float* bias, int64_t N, int64_t C, double eps) = 0;
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                  const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C) = 0;
  virtual void act_forward(float* out, const float* inp, int64_t n, Act act) = 0;
  virtual void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, Act act) = 0;
  virtual void add_inplace(float* y, const float* x, int64_t n) = 0;

  // ---- OpenCLIP's tower options (ops/tokens.h): LayerScale, token mean, token gather ----
  virtual void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C) = 0;
  virtual void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N,
                                    int64_t C) = 0;
  virtual void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C) = 0;
  virtual void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first,
                                    int64_t C) = 0;  // accumulates
  virtual void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn,
                                     int64_t K, int64_t C) = 0;
  virtual void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn,
                                      int64_t K, int64_t C) = 0;  // accumulates

  // ---- attention ---------------------------------------------------------------------
  virtual void attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                                 bool causal, Prec prec = Prec::F32) = 0;
  virtual void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att,
                                  int64_t B, int64_t Tn, int64_t C, int64_t H, bool causal, Prec prec = Prec::F32) = 0;

  // ---- embeddings and gathers (tokens/idx are host arrays: they come with the batch) ---
  virtual void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P) = 0;
  virtual void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B,
                                 int64_t Np, int64_t C) = 0;
  virtual void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np,
                                  int64_t C) = 0;
  virtual void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B,
                                   int64_t Tn, int64_t C, int64_t V) = 0;
  virtual void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B,
                                    int64_t Tn, int64_t C, int64_t V) = 0;
  virtual void gather_rows_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn,
                                   int64_t C) = 0;
  virtual void gather_rows_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn,
                                    int64_t C) = 0;

  // ---- losses (the returned loss and the scalar gradients are host values) ------------
  virtual void l2norm_forward(float* out, float* norm, const float* inp, int64_t N, int64_t C) = 0;
  virtual void l2norm_backward(float* dinp, const float* dout, const float* out, const float* norm, int64_t N,
                               int64_t C) = 0;
  // dscale_log is a host float (+=), as in ops/loss.h.
  virtual double clip_loss_forward_backward(float* dimg, float* dtxt, float* dimg_all, float* dtxt_all,
                                            float* dscale_log, float* scratch, const float* img, const float* txt,
                                            const float* img_all, const float* txt_all, float scale, int64_t Nl,
                                            int64_t Na, int64_t E, int64_t label_offset) = 0;
  // dscale_log, dbias: host floats (+=).
  virtual double siglip_loss_forward_backward(float* dimg, float* dtxt, float* dscale_log, float* dbias,
                                              const float* img, const float* txt, float scale, float bias, int64_t B,
                                              int64_t M, int64_t E, bool positives) = 0;

  // ---- optimizer ---------------------------------------------------------------------
  virtual void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                          float eps, float wd, int64_t step) = 0;
  virtual void adamw_step_spans(float* p, const float* g, float* m, float* v, const std::vector<AdamWSpan>& spans,
                                float lr, float beta1, float beta2, float eps, int64_t step) = 0;
  virtual double sum_squares(const float* x, int64_t n) = 0;
  virtual void scale_inplace(float* x, int64_t n, float s) = 0;
  virtual bool all_finite(const float* x, int64_t n) = 0;
  // x[i] = round_bf16(x[i]) in place (--precision bf16 / pure_bf16 keep parameters at bf16
  // values). This default stages through host memory in chunks of 4 MiB (a device backend
  // without its own kernel stays correct); the host backends round in place.
  virtual void round_to_bf16(float* x, int64_t n);

  // ---- amp_bf16 kernels (ops/bf16_gemm.h, ops/bf16_ops.h, attention_*_bf16) -----------
  virtual void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                         int64_t ldb, float* C, int64_t ldc, const Epilogue& e = {}) = 0;
  virtual void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                         int64_t ldb, bf16* C, int64_t ldc, const Epilogue& e = {}) = 0;
  virtual void cast_to_bf16(bf16* dst, const float* src, int64_t n) = 0;
  // A GEMM weight W [N, K] that the next gemm_bf16 calls read as B (trans_b, ldb == K) until
  // W changes: the backend may keep it in a faster layout (ops/bf16_gemm.h's
  // prepare_weight_bf16). Prepare again after writing W; release before W is freed. The
  // default keeps nothing.
  virtual void prepare_weight_bf16(const bf16* /*W*/, int64_t /*N*/, int64_t /*K*/) {}
  virtual void release_weight_bf16(const bf16* /*W*/) {}
  virtual void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                                      const float* bias, int64_t N, int64_t C, double eps) = 0;
  virtual void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x,
                                          const float* weight, const float* bias, int64_t N, int64_t C, double eps) = 0;
  virtual void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act) = 0;
  virtual void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N,
                                 Act act) = 0;
  virtual void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M,
                                   int64_t N, Act act) = 0;
  virtual void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N) = 0;
  virtual void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C,
                                      int64_t H, bool causal) = 0;
  virtual void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B,
                                       int64_t Tn, int64_t C, int64_t H) = 0;

 protected:
  // nullptr when the memory cannot be had; alloc() turns that into the error, followed by
  // alloc_failure_hint() (a device backend says how much is free and what to try).
  virtual void* allocate(size_t bytes) = 0;
  virtual std::string alloc_failure_hint(size_t /*bytes*/) { return ""; }
  virtual void release(void* p) = 0;
  friend class Buffer;
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

// ---- registry ---------------------------------------------------------------------------
struct BackendInfo {
  std::string name;         // "ref", "cpu", "cuda"
  std::string description;  // one line for `openclip info`
  bool available;           // false: registered but unusable here (no GPU); reason in description
};
// Every backend this build knows, in registration order.
std::vector<BackendInfo> backend_list();
// A new instance of the named backend. Unknown or unavailable names are a user error that
// lists the available ones.
std::unique_ptr<Backend> make_backend(std::string_view name);
// The process-wide instance of the named backend (created on first use, never destroyed, so
// buffers of long-lived objects can outlive any scope). default_backend() is "cpu".
Backend& backend(std::string_view name);
// The backend name a --device value selects: the name itself when registered and available
// ("cuda:0" selects "cuda"). Anything else is a user error listing the available names; for
// "cuda..." it names what is missing: "built without CUDA" or "no visible GPU".
std::string resolve_device(std::string_view device);
Backend& default_backend();

}  // namespace oc::ops
