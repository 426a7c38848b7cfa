// A backend whose memory the host cannot touch, for tests of the code that must cross the
// host/backend boundary through copies (docs/ARCHITECTURE.md, "Compute backends"). Every op
// runs on `cpu`, but the buffers live in one reserved region of address space that is kept
// PROT_NONE except while one of this backend's own methods runs, and host_memory() says
// false, so the code under test takes the staging paths a device backend takes. A direct
// host read or write of its memory (a pointer from Clip::params(), an arena, a moment)
// faults: the process dies with "host code touched memory of the guarded backend" and the
// offset, which fails the test. Results are bitwise those of `cpu` (the same kernels).
// One instance per thread: the protection is flipped by whoever calls.
#pragma once
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <map>

#include "core/check.h"
#include "ops/backend.h"

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
  // round_to_bf16: Backend's default (staged through the host), what a device backend
  // without its own kernel runs.
  int64_t copies_to_host() const { return copies_to_host_; }
  int64_t copies_from_host() const { return copies_from_host_; }

  // ---- ops: cpu's, with the region open ----------------------------------------------
  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
            int64_t ldb, float beta, float* C, int64_t ldc, ops::Prec prec) override {
    Open o(*this);
    inner_.gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, prec);
  }
  void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                    int64_t ldc, int64_t stride_c, ops::Prec prec) override {
    Open o(*this);
    inner_.gemm_batched(batch, ta, tb, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c,
                        prec);
  }
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                      int64_t N, ops::Prec prec) override {
    Open o(*this);
    inner_.linear_forward(out, inp, weight, bias, M, K, N, prec);
  }
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int64_t M, int64_t K, int64_t N, ops::Prec prec) override {
    Open o(*this);
    inner_.linear_backward(dinp, dweight, dbias, dout, inp, weight, M, K, N, prec);
  }
  void proj_forward(float* out, const float* inp, const float* w, int64_t M, int64_t K, int64_t N,
                    ops::Prec prec) override {
    Open o(*this);
    inner_.proj_forward(out, inp, w, M, K, N, prec);
  }
  void proj_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int64_t M, int64_t K,
                     int64_t N, ops::Prec prec) override {
    Open o(*this);
    inner_.proj_backward(dinp, dw, dout, inp, w, M, K, N, prec);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                         int64_t N, int64_t C, double eps) override {
    Open o(*this);
    inner_.layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps);
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C) override {
    Open o(*this);
    inner_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
  }
  void act_forward(float* out, const float* inp, int64_t n, ops::Act act) override {
    Open o(*this);
    inner_.act_forward(out, inp, n, act);
  }
  void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, ops::Act act) override {
    Open o(*this);
    inner_.act_backward(dinp, dout, inp, n, act);
  }
  void add_inplace(float* y, const float* x, int64_t n) override {
    Open o(*this);
    inner_.add_inplace(y, x, n);
  }
  void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C) override {
    Open o(*this);
    inner_.layer_scale_forward(x, gamma, N, C);
  }
  void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N,
                            int64_t C) override {
    Open o(*this);
    inner_.layer_scale_backward(dgamma, o_dx, dy, gamma, N, C);
  }
  void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C) override {
    Open o(*this);
    inner_.mean_tokens_forward(out, inp, B, Tn, first, C);
  }
  void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C) override {
    Open o(*this);
    inner_.mean_tokens_backward(dinp, dout, B, Tn, first, C);
  }
  void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                             int64_t C) override {
    Open o(*this);
    inner_.gather_tokens_forward(out, inp, idx, B, Tn, K, C);
  }
  void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                              int64_t C) override {
    Open o(*this);
    inner_.gather_tokens_backward(dinp, dout, idx, B, Tn, K, C);
  }
  void attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                         bool causal, ops::Prec prec) override {
    Open o(*this);
    inner_.attention_forward(out, att, qkv, B, Tn, C, H, causal, prec);
  }
  void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int64_t B,
                          int64_t Tn, int64_t C, int64_t H, bool causal, ops::Prec prec) override {
    Open o(*this);
    inner_.attention_backward(dqkv, scratch, dout, qkv, att, B, Tn, C, H, causal, prec);
  }
  void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P) override {
    Open o(*this);
    inner_.im2patches(patches, img, B, S, P);
  }
  void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                         int64_t C) override {
    Open o(*this);
    inner_.vit_embed_forward(x, patch_out, cls, pos, B, Np, C);
  }
  void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np,
                          int64_t C) override {
    Open o(*this);
    inner_.vit_embed_backward(dpatch_out, dcls, dpos, dx, B, Np, C);
  }
  void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                           int64_t C, int64_t V) override {
    Open o(*this);
    inner_.token_embed_forward(x, tokens, wte, wpe, B, Tn, C, V);
  }
  void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                            int64_t C, int64_t V) override {
    Open o(*this);
    inner_.token_embed_backward(dwte, dwpe, dx, tokens, B, Tn, C, V);
  }
  void gather_rows_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn,
                           int64_t C) override {
    Open o(*this);
    inner_.gather_rows_forward(out, inp, idx, B, Tn, C);
  }
  void gather_rows_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn,
                            int64_t C) override {
    Open o(*this);
    inner_.gather_rows_backward(dinp, dout, idx, B, Tn, C);
  }
  void l2norm_forward(float* out, float* norm, const float* inp, int64_t N, int64_t C) override {
    Open o(*this);
    inner_.l2norm_forward(out, norm, inp, N, C);
  }
  void l2norm_backward(float* dinp, const float* dout, const float* out, const float* norm, int64_t N,
                       int64_t C) override {
    Open o(*this);
    inner_.l2norm_backward(dinp, dout, out, norm, N, C);
  }
  double clip_loss_forward_backward(float* dimg, float* dtxt, float* dimg_all, float* dtxt_all, float* dscale_log,
                                    float* scratch, const float* img, const float* txt, const float* img_all,
                                    const float* txt_all, float scale, int64_t Nl, int64_t Na, int64_t E,
                                    int64_t label_offset) override {
    Open o(*this);
    return inner_.clip_loss_forward_backward(dimg, dtxt, dimg_all, dtxt_all, dscale_log, scratch, img, txt, img_all,
                                             txt_all, scale, Nl, Na, E, label_offset);
  }
  double siglip_loss_forward_backward(float* dimg, float* dtxt, float* dscale_log, float* dbias, const float* img,
                                      const float* txt, float scale, float bias, int64_t B, int64_t M, int64_t E,
                                      bool positives) override {
    Open o(*this);
    return inner_.siglip_loss_forward_backward(dimg, dtxt, dscale_log, dbias, img, txt, scale, bias, B, M, E,
                                               positives);
  }
  void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                  float eps, float wd, int64_t step) override {
    Open o(*this);
    inner_.adamw_step(p, g, m, v, n, lr, beta1, beta2, eps, wd, step);
  }
  void adamw_step_spans(float* p, const float* g, float* m, float* v, const std::vector<ops::AdamWSpan>& spans,
                        float lr, float beta1, float beta2, float eps, int64_t step) override {
    Open o(*this);
    inner_.adamw_step_spans(p, g, m, v, spans, lr, beta1, beta2, eps, step);
  }
  double sum_squares(const float* x, int64_t n) override {
    Open o(*this);
    return inner_.sum_squares(x, n);
  }
  void scale_inplace(float* x, int64_t n, float s) override {
    Open o(*this);
    inner_.scale_inplace(x, n, s);
  }
  bool all_finite(const float* x, int64_t n) override {
    Open o(*this);
    return inner_.all_finite(x, n);
  }
  void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                 int64_t ldb, float* C, int64_t ldc, const ops::Epilogue& e) override {
    Open o(*this);
    inner_.gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e);
  }
  void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                 int64_t ldb, bf16* C, int64_t ldc, const ops::Epilogue& e) override {
    Open o(*this);
    inner_.gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e);
  }
  void cast_to_bf16(bf16* dst, const float* src, int64_t n) override {
    Open o(*this);
    inner_.cast_to_bf16(dst, src, n);
  }
  void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                              const float* bias, int64_t N, int64_t C, double eps) override {
    Open o(*this);
    inner_.layernorm_forward_bf16(out, mean, rstd, inp, weight, bias, N, C, eps);
  }
  void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                  const float* bias, int64_t N, int64_t C, double eps) override {
    Open o(*this);
    inner_.add_layernorm_forward_bf16(xm, out, mean, rstd, x, weight, bias, N, C, eps);
  }
  void act_forward_bf16(bf16* out, const float* inp, int64_t n, ops::Act act) override {
    Open o(*this);
    inner_.act_forward_bf16(out, inp, n, act);
  }
  void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N,
                         ops::Act act) override {
    Open o(*this);
    inner_.act_backward_bf16(dinp, dbias, dout, inp, M, N, act);
  }
  void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M,
                           int64_t N, ops::Act act) override {
    Open o(*this);
    inner_.act_value_grad_bf16(act16, dh16, dbias, dact, h, M, N, act);
  }
  void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N) override {
    Open o(*this);
    inner_.bias_grad_to_bf16(out, dbias, dout, M, N);
  }
  void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                              bool causal) override {
    Open o(*this);
    inner_.attention_forward_bf16(out, att, qkv, B, Tn, C, H, causal);
  }
  void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B, int64_t Tn,
                               int64_t C, int64_t H) override {
    Open o(*this);
    inner_.attention_backward_bf16(dqkv, dout, qkv, att, B, Tn, C, H);
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
