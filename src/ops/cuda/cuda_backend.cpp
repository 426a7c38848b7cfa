// The CUDA backend: device memory (cudaMalloc with a size-bucketed cache), one stream, GEMMs
// on cuBLASLt, CUDA kernels for the elementwise and row ops, and a labelled SLOW HOST
// FALLBACK (host_fallback.h) for attention, the losses and the fused amp_bf16 passes.
// Not implemented (throws "not yet implemented on cuda"): Prec::BF16 on the fp32 GEMM entry
// points. UNTESTED ON A GPU: written and compiled on a machine without one (docs/CUDA.md).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <mutex>

#include "ops/attention.h"
#include "ops/bf16_ops.h"
#include "ops/cuda/cuda_backend.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/gemm_lt.h"
#include "ops/cuda/host_fallback.h"
#include "ops/cuda/kernels.h"
#include "ops/loss.h"
#include "ops/siglip_loss.h"

namespace oc::ops {
namespace {

namespace k = cuda;
#define OC_LAUNCHED() OC_CUDA_CHECK(cudaGetLastError())  // after every kernel launch

[[noreturn]] void not_on_cuda(const char* op) {
  OC_USER_ERROR("{} is not yet implemented on cuda (docs/CUDA.md); use --device cpu", op);
}

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    OC_CUDA_CHECK(cudaSetDevice(device_));
    OC_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    lt_ = std::make_unique<k::LtContext>();
    OC_CUDA_CHECK(cudaMalloc(&reduce_, (k::kReduceBlocks + 2) * sizeof(double)));
  }
  ~CudaBackend() override {
    cudaStreamSynchronize(s_);
    for (auto& [bytes, p] : cache_) cudaFree(p);
    cudaFree(reduce_);
    for (auto& [p, bytes] : scratch_) cudaFree(p);
    cudaStreamDestroy(s_);
  }
  std::string_view name() const override { return "cuda"; }
  bool host_memory() const override { return false; }

  // ---- memory ----
  void zero(void* dst, size_t bytes) override {
    if (bytes) OC_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, s_));
  }
  void fill(float* dst, int64_t n, float v) override { k::fill(dst, n, v, s_); OC_LAUNCHED(); }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    if (!bytes) return;
    OC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s_));
    OC_CUDA_CHECK(cudaStreamSynchronize(s_));  // the host source may be freed on return
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    if (!bytes) return;
    OC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s_));
    OC_CUDA_CHECK(cudaStreamSynchronize(s_));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes && dst != src) OC_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s_));
  }
  float read_scalar(const float* p) override {
    float v;
    copy_to_host(&v, p, sizeof v);
    return v;
  }
  void write_scalar(float* p, float v) override { copy_from_host(p, &v, sizeof v); }
  void synchronize() override { OC_CUDA_CHECK(cudaStreamSynchronize(s_)); }

  // ---- dense: cuBLASLt, fp32 compute without TF32 ----
  void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
            int64_t ldb, float beta, float* C, int64_t ldc, Prec prec) override {
    gemm_batched(1, ta, tb, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, prec);
  }
  void gemm_batched(int64_t batch, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, int64_t stride_a, const float* B, int64_t ldb, int64_t stride_b, float beta, float* C,
                    int64_t ldc, int64_t stride_c, Prec prec) override {
    if (prec != Prec::F32) not_on_cuda("an fp32 GEMM with bf16-rounded operands (Prec::BF16)");
    k::LtGemm g{ta, tb, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, false, alpha, beta};
    lt_->run(g, s_);
  }
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t M, int64_t K,
                      int64_t N, Prec prec) override {
    if (prec != Prec::F32) not_on_cuda("linear_forward with Prec::BF16");
    k::LtGemm g{false, true, M, N, K, inp, K, 0, weight, K, 0, out, N, 0};
    g.bias = bias;  // cuBLASLt bias epilogue
    lt_->run(g, s_);
  }
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, int64_t M, int64_t K, int64_t N, Prec prec) override {
    if (prec != Prec::F32) not_on_cuda("linear_backward with Prec::BF16");
    if (dinp) gemm(false, false, M, K, N, 1.0f, dout, N, weight, K, 0.0f, dinp, K, prec);
    gemm(true, false, N, K, M, 1.0f, dout, N, inp, K, 1.0f, dweight, K, prec);
    if (dbias) {
      k::col_sums_acc(dbias, dout, M, N, s_);
      OC_LAUNCHED();
    }
  }
  void proj_forward(float* out, const float* inp, const float* w, int64_t M, int64_t K, int64_t N, Prec prec) override {
    gemm(false, false, M, N, K, 1.0f, inp, K, w, N, 0.0f, out, N, prec);
  }
  void proj_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int64_t M, int64_t K,
                     int64_t N, Prec prec) override {
    if (dinp) gemm(false, true, M, K, N, 1.0f, dout, N, w, N, 0.0f, dinp, K, prec);
    gemm(true, false, K, N, M, 1.0f, inp, K, dout, N, 1.0f, dw, N, prec);
  }

  // ---- normalization, activation, residual: CUDA kernels ----
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                         int64_t N, int64_t C, double eps) override {
    k::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps, s_); OC_LAUNCHED();
  }
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, int64_t N, int64_t C) override {
    k::layernorm_backward_dwdb(dweight, dbias, dout, inp, mean, rstd, N, C, s_); OC_LAUNCHED();
    k::layernorm_backward_dx(dinp, dout, inp, weight, mean, rstd, N, C, s_); OC_LAUNCHED();
  }
  void act_forward(float* out, const float* inp, int64_t n, Act act) override {
    k::act_forward(out, inp, n, int(act), s_); OC_LAUNCHED();
  }
  void act_backward(float* dinp, const float* dout, const float* inp, int64_t n, Act act) override {
    k::act_backward(dinp, dout, inp, n, int(act), s_); OC_LAUNCHED();
  }
  void add_inplace(float* y, const float* x, int64_t n) override { k::add_inplace(y, x, n, s_); OC_LAUNCHED(); }
  void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C) override {
    k::layer_scale_forward(x, gamma, N, C, s_); OC_LAUNCHED();
  }
  void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N,
                            int64_t C) override {
    k::layer_scale_backward(dgamma, o_dx, dy, gamma, N, C, s_); OC_LAUNCHED();
  }
  void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C) override {
    k::mean_tokens_forward(out, inp, B, Tn, first, C, s_); OC_LAUNCHED();
  }
  void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C) override {
    k::mean_tokens_backward(dinp, dout, B, Tn, first, C, s_); OC_LAUNCHED();
  }
  void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                             int64_t C) override {
    k::gather_tokens_forward(out, inp, upload_index(idx, B * K, Tn, "gather_tokens"), B, Tn, K, C, s_); OC_LAUNCHED();
  }
  void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                              int64_t C) override {
    k::gather_tokens_backward(dinp, dout, upload_index(idx, B * K, Tn, "gather_tokens"), B, Tn, K, C, s_);
    OC_LAUNCHED();
  }

  // ---- attention: SLOW HOST FALLBACK (no CUDA kernel yet) ----
  void attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                         bool causal, Prec prec) override {
    k::HostMirror h(s_);
    float* o = h.io(out, B * Tn * C);
    float* a = h.io(att, B * H * Tn * Tn);
    ops::attention_forward(o, a, h.in(qkv, B * Tn * 3 * C), B, Tn, C, H, causal, prec);
    h.finish();
  }
  void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* att, int64_t B,
                          int64_t Tn, int64_t C, int64_t H, bool causal, Prec prec) override {
    k::HostMirror h(s_);
    float* d = h.io(dqkv, B * Tn * 3 * C);
    float* sc = h.io(scratch, B * H * Tn * Tn);
    ops::attention_backward(d, sc, h.in(dout, B * Tn * C), h.in(qkv, B * Tn * 3 * C), h.in(att, B * H * Tn * Tn), B,
                            Tn, C, H, causal, prec);
    h.finish();
  }

  // ---- embeddings and gathers: CUDA kernels (host index arrays are uploaded) ----
  void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P) override {
    k::im2patches(patches, img, B, S, P, s_); OC_LAUNCHED();
  }
  void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                         int64_t C) override {
    k::vit_embed_forward(x, patch_out, cls, pos, B, Np, C, s_); OC_LAUNCHED();
  }
  void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np,
                          int64_t C) override {
    k::vit_embed_backward(dpatch_out, dcls, dpos, dx, B, Np, C, s_); OC_LAUNCHED();
  }
  void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                           int64_t C, int64_t V) override {
    k::token_embed_forward(x, upload_index(tokens, B * Tn, V, "token_embed"), wte, wpe, B, Tn, C, s_); OC_LAUNCHED();
  }
  void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                            int64_t C, int64_t V) override {
    k::token_embed_backward(dwte, dwpe, dx, upload_index(tokens, B * Tn, V, "token_embed"), B, Tn, C, s_);
    OC_LAUNCHED();
  }
  // out[b] = inp[b, idx[b]]: the token gather with K = 1.
  void gather_rows_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn,
                           int64_t C) override {
    gather_tokens_forward(out, inp, idx, B, Tn, 1, C);
  }
  void gather_rows_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn,
                            int64_t C) override {
    gather_tokens_backward(dinp, dout, idx, B, Tn, 1, C);
  }

  // ---- losses: L2 norm is a kernel; the two losses are SLOW HOST FALLBACKS ----
  void l2norm_forward(float* out, float* norm, const float* inp, int64_t N, int64_t C) override {
    k::l2norm_forward(out, norm, inp, N, C, s_); OC_LAUNCHED();
  }
  void l2norm_backward(float* dinp, const float* dout, const float* out, const float* norm, int64_t N,
                       int64_t C) override {
    k::l2norm_backward(dinp, dout, out, norm, N, C, s_); OC_LAUNCHED();
  }
  double clip_loss_forward_backward(float* dimg, float* dtxt, float* dimg_all, float* dtxt_all, float* dscale_log,
                                    float* scratch, const float* img, const float* txt, const float* img_all,
                                    const float* txt_all, float scale, int64_t Nl, int64_t Na, int64_t E,
                                    int64_t label_offset) override {
    k::HostMirror h(s_);
    const double loss = ops::clip_loss_forward_backward(
        h.io(dimg, Nl * E), h.io(dtxt, Nl * E), h.io(dimg_all, Na * E), h.io(dtxt_all, Na * E), dscale_log,
        h.io(scratch, 2 * Nl * Na), h.in(img, Nl * E), h.in(txt, Nl * E), h.in(img_all, Na * E),
        h.in(txt_all, Na * E), scale, Nl, Na, E, label_offset);
    h.finish();
    return loss;
  }
  double siglip_loss_forward_backward(float* dimg, float* dtxt, float* dscale_log, float* dbias, const float* img,
                                      const float* txt, float scale, float bias, int64_t B, int64_t M, int64_t E,
                                      bool positives) override {
    k::HostMirror h(s_);
    const double loss =
        ops::siglip_loss_forward_backward(h.io(dimg, B * E), h.io(dtxt, M * E), dscale_log, dbias, h.in(img, B * E),
                                          h.in(txt, M * E), scale, bias, B, M, E, positives);
    h.finish();
    return loss;
  }

  // ---- optimizer: CUDA kernels ----
  void adamw_step(float* p, const float* g, float* m, float* v, int64_t n, float lr, float beta1, float beta2,
                  float eps, float wd, int64_t step) override {
    adamw_step_spans(p, g, m, v, {AdamWSpan{0, n, wd}}, lr, beta1, beta2, eps, step);
  }
  void adamw_step_spans(float* p, const float* g, float* m, float* v, const std::vector<AdamWSpan>& spans, float lr,
                        float beta1, float beta2, float eps, int64_t step) override;
  double sum_squares(const float* x, int64_t n) override {
    double* d = static_cast<double*>(reduce_);
    k::sum_squares(d, d + 1, x, n, s_); OC_LAUNCHED();
    double r = 0;
    copy_to_host(&r, d, sizeof r);
    return r;
  }
  void scale_inplace(float* x, int64_t n, float s) override { k::scale_inplace(x, n, s, s_); OC_LAUNCHED(); }
  bool all_finite(const float* x, int64_t n) override {
    int* flag = static_cast<int*>(reduce_);
    zero(flag, sizeof(int));
    k::count_nonfinite(flag, x, n, s_); OC_LAUNCHED();
    int f = 0;
    copy_to_host(&f, flag, sizeof f);
    return f == 0;
  }

  // ---- amp_bf16: GEMMs on cuBLASLt (bf16 inputs, fp32 accumulation); fused passes are
  // SLOW HOST FALLBACKS ----
  void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                 int64_t ldb, float* C, int64_t ldc, const Epilogue& e) override {
    k::LtGemm g{ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, true, 1.0f, e.beta};
    g.bias = e.bias;
    lt_->run(g, s_);
    if (e.act) {
      k::act_rows_inplace(C, ldc, M, N, int(e.act_fn), s_);
      OC_LAUNCHED();
    }
  }
  void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                 int64_t ldb, bf16* C, int64_t ldc, const Epilogue& e) override {
    OC_CHECK(e.beta == 0.0f, "gemm_bf16 with a bf16 output needs beta 0, not {}", e.beta);
    float* tmp = scratch_floats(size_t(M * N), 0);  // fp32 result, rounded once after the epilogue
    k::LtGemm g{ta, tb, M, N, K, A, lda, 0, B, ldb, 0, tmp, N, 0, 1, true, 1.0f, 0.0f};
    g.bias = e.bias;
    lt_->run(g, s_);
    k::rows_to_bf16(reinterpret_cast<k::bf16_t*>(C), ldc, tmp, N, M, N, e.act ? int(e.act_fn) : -1, s_);
    OC_LAUNCHED();
  }
  void cast_to_bf16(bf16* dst, const float* src, int64_t n) override {
    k::cast_to_bf16(reinterpret_cast<k::bf16_t*>(dst), src, n, s_); OC_LAUNCHED();
  }
  void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                              const float* bias, int64_t N, int64_t C, double eps) override {
    k::HostMirror h(s_);
    ops::layernorm_forward_bf16(h.io(out, N * C), h.io(mean, N), h.io(rstd, N), h.in(inp, N * C), h.in(weight, C),
                                h.in(bias, C), N, C, eps);
    h.finish();
  }
  void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                  const float* bias, int64_t N, int64_t C, double eps) override {
    k::HostMirror h(s_);
    ops::add_layernorm_forward_bf16(h.io(xm, N * C), h.io(out, N * C), h.io(mean, N), h.io(rstd, N), h.in(x, N * C),
                                    h.in(weight, C), h.in(bias, C), N, C, eps);
    h.finish();
  }
  void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act) override {
    k::HostMirror h(s_);
    ops::act_forward_bf16(h.io(out, n), h.in(inp, n), n, act);
    h.finish();
  }
  void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N,
                         Act act) override {
    k::HostMirror h(s_);
    ops::act_backward_bf16(h.io(dinp, M * N), h.io(dbias, N), h.in(dout, M * N), h.in(inp, M * N), M, N, act);
    h.finish();
  }
  void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* hh, int64_t M,
                           int64_t N, Act act) override {
    k::HostMirror h(s_);
    ops::act_value_grad_bf16(h.io(act16, M * N), h.io(dh16, M * N), h.io(dbias, N), h.in(dact, M * N),
                             h.in(hh, M * N), M, N, act);
    h.finish();
  }
  void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N) override {
    k::HostMirror h(s_);
    ops::bias_grad_to_bf16(h.io(out, M * N), h.io(dbias, N), h.in(dout, M * N), M, N);
    h.finish();
  }
  void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                              bool causal) override {
    k::HostMirror h(s_);
    ops::attention_forward_bf16(h.io(out, B * Tn * C), h.io(att, B * H * Tn * Tn), h.in(qkv, B * Tn * 3 * C), B, Tn, C,
                                H, causal);
    h.finish();
  }
  void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B, int64_t Tn,
                               int64_t C, int64_t H) override {
    k::HostMirror h(s_);
    ops::attention_backward_bf16(h.io(dqkv, B * Tn * 3 * C), h.in(dout, B * Tn * C), h.in(qkv, B * Tn * 3 * C),
                                 h.in(att, B * H * Tn * Tn), B, Tn, C, H);
    h.finish();
  }

 protected:
  void* allocate(size_t bytes) override;
  void release(void* p) override;
  std::string alloc_failure_hint(size_t bytes) override;

 private:
  static size_t bucket(size_t bytes) {  // 512 B granularity below 1 MiB, 2 MiB above
    const size_t g = bytes < (size_t(1) << 20) ? 512 : (size_t(2) << 20);
    return (bytes + g - 1) / g * g;
  }
  // Device scratch slot `slot` of at least `bytes` (grown, never shrunk; stream-ordered reuse).
  void* scratch(size_t bytes, int slot);
  float* scratch_floats(size_t n, int slot) { return static_cast<float*>(scratch(n * sizeof(float), slot)); }
  // Checks a host index array (each value in [0, limit)) and copies it to device scratch.
  const int32_t* upload_index(const int32_t* idx, int64_t n, int64_t limit, const char* op);

  int device_ = 0;
  cudaStream_t s_ = nullptr;
  std::unique_ptr<k::LtContext> lt_;
  void* reduce_ = nullptr;
  std::mutex mu_;
  std::multimap<size_t, void*> cache_;  // freed blocks by bucket size
  std::map<void*, size_t> live_;        // allocated block -> bucket size
  std::vector<std::pair<void*, size_t>> scratch_ = std::vector<std::pair<void*, size_t>>(3, {nullptr, 0});
};

void CudaBackend::adamw_step_spans(float* p, const float* g, float* m, float* v, const std::vector<AdamWSpan>& spans,
                                   float lr, float beta1, float beta2, float eps, int64_t step) {
  OC_CHECK(step >= 1, "adamw_step: step {} must be >= 1 (1-based, after increment)", step);
  // The scalars of ops/ref/optim.cpp, computed the same way on the host.
  const double bc1 = 1.0 - std::pow(double(beta1), double(step));
  const double bc2 = 1.0 - std::pow(double(beta2), double(step));
  const float step_size = float(double(lr) / bc1), bc2_sqrt = float(std::sqrt(bc2));
  const float one_m_b1 = float(1.0 - double(beta1)), one_m_b2 = float(1.0 - double(beta2));
  // One launch over all spans: a block per chunk of at most 4096 elements.
  constexpr int64_t kChunk = 4096;
  std::vector<k::AdamWChunk> chunks;
  for (const AdamWSpan& s : spans)
    for (int64_t o = 0; o < s.n; o += kChunk) chunks.push_back({s.offset + o, int32_t(std::min(kChunk, s.n - o)), s.wd});
  if (chunks.empty()) return;
  auto* dchunks = static_cast<k::AdamWChunk*>(scratch(chunks.size() * sizeof(k::AdamWChunk), 2));
  copy_from_host(dchunks, chunks.data(), chunks.size() * sizeof(k::AdamWChunk));
  k::adamw_chunks(p, g, m, v, dchunks, int64_t(chunks.size()), lr, step_size, bc2_sqrt, beta1, beta2, one_m_b1,
                  one_m_b2, eps, s_);
  OC_LAUNCHED();
}

void* CudaBackend::allocate(size_t bytes) {
  const size_t b = bucket(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* p = nullptr;
  if (auto it = cache_.find(b); it != cache_.end()) {
    p = it->second;
    cache_.erase(it);
  } else if (cudaMalloc(&p, b) != cudaSuccess) {
    cudaGetLastError();  // clear the error, give the cache back to the driver, try once more
    OC_CUDA_CHECK(cudaStreamSynchronize(s_));
    for (auto& [sz, q] : cache_) cudaFree(q);
    cache_.clear();
    if (cudaMalloc(&p, b) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
  }
  live_[p] = b;
  return p;
}

void CudaBackend::release(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) return;
  cache_.emplace(it->second, p);  // stream-ordered: later work on s_ may reuse it safely
  live_.erase(it);
}

std::string CudaBackend::alloc_failure_hint(size_t bytes) {
  size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);
  return fmt::format(
      " on GPU {}: {:.2f} GiB free of {:.2f} GiB; try a smaller --batch-size or --grad-checkpointing", device_,
      double(free_b) / double(1ull << 30), double(total_b) / double(1ull << 30));
}

void* CudaBackend::scratch(size_t bytes, int slot) {
  auto& [p, have] = scratch_[size_t(slot)];
  if (have < bytes) {
    OC_CUDA_CHECK(cudaStreamSynchronize(s_));
    if (p) OC_CUDA_CHECK(cudaFree(p));
    p = nullptr, have = 0;
    const size_t want = bucket(bytes);
    if (cudaMalloc(&p, want) != cudaSuccess) {
      cudaGetLastError();
      OC_USER_ERROR("backend cuda: cannot allocate {} bytes of scratch{}", want, alloc_failure_hint(want));
    }
    have = want;
  }
  return p;
}

const int32_t* CudaBackend::upload_index(const int32_t* idx, int64_t n, int64_t limit, const char* op) {
  for (int64_t i = 0; i < n; ++i)
    OC_CHECK(idx[i] >= 0 && idx[i] < limit, "{}: index {} at {} outside [0, {})", op, idx[i], i, limit);
  void* d = scratch(size_t(n) * sizeof(int32_t), 1);
  copy_from_host(d, idx, size_t(n) * sizeof(int32_t));
  return static_cast<const int32_t*>(d);
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace oc::ops
