// The CUDA backend: device memory (cudaMalloc with a size-bucketed cache), one stream, GEMMs
// on cuBLASLt, CUDA kernels for the elementwise and row ops, and a labelled SLOW HOST
// FALLBACK (host_fallback.h) for attention, the losses and the fused amp_bf16 passes.
// Not implemented (throws "not yet implemented on cuda"): Prec::BF16 on the fp32 GEMM entry
// points. UNTESTED ON A GPU: written and compiled on a machine without one (docs/CUDA.md).
#include "ops/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <mutex>
#include <span>

#include "ops/cpu/attention.h"
#include "ops/cpu/batchnorm.h"
#include "ops/cpu/bf16_ops.h"
#include "ops/cpu/conv.h"
#include "ops/cpu/loss.h"
#include "ops/cpu/pool.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/gemm_lt.h"
#include "ops/cuda/host_fallback.h"
#include "ops/cuda/kernels.h"

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
  void run(const GemmArgs& a) override {
    const auto& [ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, prec] = a;
    run(GemmBatchedArgs{.batch = 1, .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = alpha, .A = A, .lda = lda,
                        .stride_a = 0, .B = B, .ldb = ldb, .stride_b = 0, .beta = beta, .C = C, .ldc = ldc,
                        .stride_c = 0, .prec = prec});
  }
  void run(const GemmBatchedArgs& a) override {
    const auto& [batch, ta, tb, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b, beta, C, ldc, stride_c, prec] = a;
    if (prec != Prec::F32) not_on_cuda("an fp32 GEMM with bf16-rounded operands (Prec::BF16)");
    k::LtGemm g{ta, tb, M, N, K, A, lda, stride_a, B, ldb, stride_b, C, ldc, stride_c, batch, false, alpha, beta};
    lt_->run(g, s_);
  }
  void run(const LinearForwardArgs& a) override {
    const auto& [out, inp, weight, bias, M, K, N, prec] = a;
    if (prec != Prec::F32) not_on_cuda("linear_forward with Prec::BF16");
    k::LtGemm g{false, true, M, N, K, inp, K, 0, weight, K, 0, out, N, 0};
    g.bias = bias;  // cuBLASLt bias epilogue
    lt_->run(g, s_);
  }
  void run(const LinearBackwardArgs& a) override {
    const auto& [dinp, dweight, dbias, dout, inp, weight, M, K, N, prec] = a;
    if (prec != Prec::F32) not_on_cuda("linear_backward with Prec::BF16");
    if (dinp)
      run(GemmArgs{.ta = false, .tb = false, .M = M, .N = K, .K = N, .alpha = 1.0f, .A = dout, .lda = N, .B = weight,
                   .ldb = K, .beta = 0.0f, .C = dinp, .ldc = K, .prec = prec});
    run(GemmArgs{.ta = true, .tb = false, .M = N, .N = K, .K = M, .alpha = 1.0f, .A = dout, .lda = N, .B = inp,
                 .ldb = K, .beta = 1.0f, .C = dweight, .ldc = K, .prec = prec});
    if (dbias) {
      k::col_sums_acc(dbias, dout, M, N, s_);
      OC_LAUNCHED();
    }
  }
  void run(const ProjForwardArgs& a) override {
    const auto& [out, inp, w, M, K, N, prec] = a;
    run(GemmArgs{.ta = false, .tb = false, .M = M, .N = N, .K = K, .alpha = 1.0f, .A = inp, .lda = K, .B = w, .ldb = N,
                 .beta = 0.0f, .C = out, .ldc = N, .prec = prec});
  }
  void run(const ProjBackwardArgs& a) override {
    const auto& [dinp, dw, dout, inp, w, M, K, N, prec] = a;
    if (dinp)
      run(GemmArgs{.ta = false, .tb = true, .M = M, .N = K, .K = N, .alpha = 1.0f, .A = dout, .lda = N, .B = w,
                   .ldb = N, .beta = 0.0f, .C = dinp, .ldc = K, .prec = prec});
    run(GemmArgs{.ta = true, .tb = false, .M = K, .N = N, .K = M, .alpha = 1.0f, .A = inp, .lda = K, .B = dout,
                 .ldb = N, .beta = 1.0f, .C = dw, .ldc = N, .prec = prec});
  }

  // ---- normalization, activation, residual: CUDA kernels ----
  void run(const LayerNormForwardArgs& a) override {
    const auto& [out, mean, rstd, inp, weight, bias, N, C, eps] = a;
    k::layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps, s_); OC_LAUNCHED();
  }
  void run(const LayerNormBackwardArgs& a) override {
    const auto& [dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C] = a;
    k::layernorm_backward_dwdb(dweight, dbias, dout, inp, mean, rstd, N, C, s_); OC_LAUNCHED();
    k::layernorm_backward_dx(dinp, dout, inp, weight, mean, rstd, N, C, s_); OC_LAUNCHED();
  }
  void run(const ActForwardArgs& a) override {
    const auto& [out, inp, n, act] = a;
    k::act_forward(out, inp, n, int(act), s_); OC_LAUNCHED();
  }
  void run(const ActBackwardArgs& a) override {
    const auto& [dinp, dout, inp, n, act] = a;
    k::act_backward(dinp, dout, inp, n, int(act), s_); OC_LAUNCHED();
  }
  void run(const AddInplaceArgs& a) override {
    const auto& [y, x, n] = a;
    k::add_inplace(y, x, n, s_);
    OC_LAUNCHED();
  }
  void run(const LayerScaleForwardArgs& a) override {
    const auto& [x, gamma, N, C] = a;
    k::layer_scale_forward(x, gamma, N, C, s_); OC_LAUNCHED();
  }
  void run(const LayerScaleBackwardArgs& a) override {
    const auto& [dgamma, o_dx, dy, gamma, N, C] = a;
    k::layer_scale_backward(dgamma, o_dx, dy, gamma, N, C, s_); OC_LAUNCHED();
  }
  void run(const MeanTokensForwardArgs& a) override {
    const auto& [out, inp, B, Tn, first, C] = a;
    k::mean_tokens_forward(out, inp, B, Tn, first, C, s_); OC_LAUNCHED();
  }
  void run(const MeanTokensBackwardArgs& a) override {
    const auto& [dinp, dout, B, Tn, first, C] = a;
    k::mean_tokens_backward(dinp, dout, B, Tn, first, C, s_); OC_LAUNCHED();
  }
  void run(const GatherTokensForwardArgs& a) override {
    const auto& [out, inp, idx, B, Tn, K, C] = a;
    k::gather_tokens_forward(out, inp, upload_index(idx, B * K, Tn, "gather_tokens"), B, Tn, K, C, s_); OC_LAUNCHED();
  }
  void run(const GatherTokensBackwardArgs& a) override {
    const auto& [dinp, dout, idx, B, Tn, K, C] = a;
    k::gather_tokens_backward(dinp, dout, upload_index(idx, B * K, Tn, "gather_tokens"), B, Tn, K, C, s_);
    OC_LAUNCHED();
  }

  // ---- attention: SLOW HOST FALLBACK (no CUDA kernel yet) ----
  void run(const AttentionForwardArgs& a) override {
    const auto& [out, att, qkv, B, Tn, C, H, causal, prec] = a;
    k::HostMirror h(s_);
    float* o = h.io(out, B * Tn * C);
    float* p = h.io(att, B * H * Tn * Tn);
    ops::attention_forward(o, p, h.in(qkv, B * Tn * 3 * C), B, Tn, C, H, causal, prec);
    h.finish();
  }
  void run(const AttentionBackwardArgs& a) override {
    const auto& [dqkv, scratch, dout, qkv, att, B, Tn, C, H, causal, prec] = a;
    k::HostMirror h(s_);
    float* d = h.io(dqkv, B * Tn * 3 * C);
    float* sc = h.io(scratch, B * H * Tn * Tn);
    ops::attention_backward(d, sc, h.in(dout, B * Tn * C), h.in(qkv, B * Tn * 3 * C), h.in(att, B * H * Tn * Tn), B,
                            Tn, C, H, causal, prec);
    h.finish();
  }

  // ---- embeddings and gathers: CUDA kernels (host index arrays are uploaded) ----
  void run(const Im2PatchesArgs& a) override {
    const auto& [patches, img, B, S, P] = a;
    k::im2patches(patches, img, B, S, P, s_); OC_LAUNCHED();
  }
  void run(const VitEmbedForwardArgs& a) override {
    const auto& [x, patch_out, cls, pos, B, Np, C] = a;
    k::vit_embed_forward(x, patch_out, cls, pos, B, Np, C, s_); OC_LAUNCHED();
  }
  void run(const VitEmbedBackwardArgs& a) override {
    const auto& [dpatch_out, dcls, dpos, dx, B, Np, C] = a;
    k::vit_embed_backward(dpatch_out, dcls, dpos, dx, B, Np, C, s_); OC_LAUNCHED();
  }
  void run(const TokenEmbedForwardArgs& a) override {
    const auto& [x, tokens, wte, wpe, B, Tn, C, V] = a;
    k::token_embed_forward(x, upload_index(tokens, B * Tn, V, "token_embed"), wte, wpe, B, Tn, C, s_); OC_LAUNCHED();
  }
  void run(const TokenEmbedBackwardArgs& a) override {
    const auto& [dwte, dwpe, dx, tokens, B, Tn, C, V] = a;
    k::token_embed_backward(dwte, dwpe, dx, upload_index(tokens, B * Tn, V, "token_embed"), B, Tn, C, s_);
    OC_LAUNCHED();
  }
  // out[b] = inp[b, idx[b]]: the token gather with K = 1.
  void run(const GatherRowsForwardArgs& a) override {
    const auto& [out, inp, idx, B, Tn, C] = a;
    run(GatherTokensForwardArgs{.out = out, .inp = inp, .idx = idx, .B = B, .Tn = Tn, .K = 1, .C = C});
  }
  void run(const GatherRowsBackwardArgs& a) override {
    const auto& [dinp, dout, idx, B, Tn, C] = a;
    run(GatherTokensBackwardArgs{.dinp = dinp, .dout = dout, .idx = idx, .B = B, .Tn = Tn, .K = 1, .C = C});
  }

  // ---- losses: L2 norm is a kernel; the two losses are SLOW HOST FALLBACKS ----
  void run(const L2NormForwardArgs& a) override {
    const auto& [out, norm, inp, N, C] = a;
    k::l2norm_forward(out, norm, inp, N, C, s_); OC_LAUNCHED();
  }
  void run(const L2NormBackwardArgs& a) override {
    const auto& [dinp, dout, out, norm, N, C] = a;
    k::l2norm_backward(dinp, dout, out, norm, N, C, s_); OC_LAUNCHED();
  }
  double run(const ClipLossArgs& a) override {
    const auto& [dimg, dtxt, dimg_all, dtxt_all, dscale_log, scratch, img, txt, img_all, txt_all, scale, Nl, Na, E,
                 label_offset] = a;
    k::HostMirror h(s_);
    const double loss = ops::clip_loss_forward_backward(
        h.io(dimg, Nl * E), h.io(dtxt, Nl * E), h.io(dimg_all, Na * E), h.io(dtxt_all, Na * E), dscale_log.get(),
        h.io(scratch, 2 * Nl * Na), h.in(img, Nl * E), h.in(txt, Nl * E), h.in(img_all, Na * E), h.in(txt_all, Na * E),
        scale, Nl, Na, E, label_offset);
    h.finish();
    return loss;
  }
  double run(const SiglipLossArgs& a) override {
    const auto& [dimg, dtxt, dscale_log, dbias, img, txt, scale, bias, B, M, E, positives] = a;
    k::HostMirror h(s_);
    const double loss =
        ops::siglip_loss_forward_backward(h.io(dimg, B * E), h.io(dtxt, M * E), dscale_log.get(), dbias.get(),
                                          h.in(img, B * E), h.in(txt, M * E), scale, bias, B, M, E, positives);
    h.finish();
    return loss;
  }

  // ---- optimizer: CUDA kernels ----
  void run(const AdamWStepArgs& a) override {
    const auto& [p, g, m, v, n, lr, beta1, beta2, eps, wd, step] = a;
    const AdamWSpan all{0, n, wd};
    run(AdamWStepSpansArgs{.p = p, .g = g, .m = m, .v = v, .spans = {&all, 1}, .lr = lr, .beta1 = beta1, .beta2 = beta2,
                           .eps = eps, .step = step});
  }
  void run(const AdamWStepSpansArgs& a) override;
  double run(const SumSquaresArgs& a) override {
    const auto& [x, n] = a;
    double* d = static_cast<double*>(reduce_);
    k::sum_squares(d, d + 1, x, n, s_); OC_LAUNCHED();
    double r = 0;
    copy_to_host(&r, d, sizeof r);
    return r;
  }
  void run(const RoundToBf16Args& a) override {
    k::round_bf16_f32(a.x, a.x, a.n, s_);
    OC_LAUNCHED();
  }
  void run(const ScaleInplaceArgs& a) override {
    const auto& [x, n, s] = a;
    k::scale_inplace(x, n, s, s_);
    OC_LAUNCHED();
  }
  bool run(const AllFiniteArgs& a) override {
    const auto& [x, n] = a;
    int* flag = static_cast<int*>(reduce_);
    zero(flag, sizeof(int));
    k::count_nonfinite(flag, x, n, s_); OC_LAUNCHED();
    int f = 0;
    copy_to_host(&f, flag, sizeof f);
    return f == 0;
  }

  // ---- amp_bf16: GEMMs on cuBLASLt (bf16 inputs, fp32 accumulation); fused passes are
  // SLOW HOST FALLBACKS ----
  void run(const GemmBf16Args& a) override {
    const auto& [ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e] = a;
    k::LtGemm g{ta, tb, M, N, K, A, lda, 0, B, ldb, 0, C, ldc, 0, 1, true, 1.0f, e.beta};
    g.bias = e.bias;
    lt_->run(g, s_);
    if (e.act) {
      k::act_rows_inplace(C, ldc, M, N, int(e.act_fn), s_);
      OC_LAUNCHED();
    }
  }
  void run(const GemmBf16ToBf16Args& a) override {
    const auto& [ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e] = a;
    OC_CHECK(e.beta == 0.0f, "gemm_bf16 with a bf16 output needs beta 0, not {}", e.beta);
    float* tmp = scratch_floats(size_t(M * N), 0);  // fp32 result, rounded once after the epilogue
    k::LtGemm g{ta, tb, M, N, K, A, lda, 0, B, ldb, 0, tmp, N, 0, 1, true, 1.0f, 0.0f};
    g.bias = e.bias;
    lt_->run(g, s_);
    k::rows_to_bf16(reinterpret_cast<k::bf16_t*>(C), ldc, tmp, N, M, N, e.act ? int(e.act_fn) : -1, s_);
    OC_LAUNCHED();
  }
  void run(const CastToBf16Args& a) override {
    const auto& [dst, src, n] = a;
    k::cast_to_bf16(reinterpret_cast<k::bf16_t*>(dst), src, n, s_); OC_LAUNCHED();
  }
  void run(const LayerNormForwardBf16Args& a) override {
    const auto& [out, mean, rstd, inp, weight, bias, N, C, eps] = a;
    k::HostMirror h(s_);
    ops::layernorm_forward_bf16(h.io(out, N * C), h.io(mean, N), h.io(rstd, N), h.in(inp, N * C), h.in(weight, C),
                                h.in(bias, C), N, C, eps);
    h.finish();
  }
  void run(const AddLayerNormForwardBf16Args& a) override {
    const auto& [xm, out, mean, rstd, x, weight, bias, N, C, eps] = a;
    k::HostMirror h(s_);
    ops::add_layernorm_forward_bf16(h.io(xm, N * C), h.io(out, N * C), h.io(mean, N), h.io(rstd, N), h.in(x, N * C),
                                    h.in(weight, C), h.in(bias, C), N, C, eps);
    h.finish();
  }
  void run(const ActForwardBf16Args& a) override {
    const auto& [out, inp, n, act] = a;
    k::HostMirror h(s_);
    ops::act_forward_bf16(h.io(out, n), h.in(inp, n), n, act);
    h.finish();
  }
  void run(const ActBackwardBf16Args& a) override {
    const auto& [dinp, dbias, dout, inp, M, N, act] = a;
    k::HostMirror h(s_);
    ops::act_backward_bf16(h.io(dinp, M * N), h.io(dbias, N), h.in(dout, M * N), h.in(inp, M * N), M, N, act);
    h.finish();
  }
  void run(const ActValueGradBf16Args& a) override {
    const auto& [act16, dh16, dbias, dact, hh, M, N, act] = a;
    k::HostMirror h(s_);
    ops::act_value_grad_bf16(h.io(act16, M * N), h.io(dh16, M * N), h.io(dbias, N), h.in(dact, M * N),
                             h.in(hh, M * N), M, N, act);
    h.finish();
  }
  void run(const BiasGradToBf16Args& a) override {
    const auto& [out, dbias, dout, M, N] = a;
    k::HostMirror h(s_);
    ops::bias_grad_to_bf16(h.io(out, M * N), h.io(dbias, N), h.in(dout, M * N), M, N);
    h.finish();
  }
  void run(const AttentionForwardBf16Args& a) override {
    const auto& [out, att, qkv, B, Tn, C, H, causal] = a;
    k::HostMirror h(s_);
    ops::attention_forward_bf16(h.io(out, B * Tn * C), h.io(att, B * H * Tn * Tn), h.in(qkv, B * Tn * 3 * C), B, Tn, C,
                                H, causal);
    h.finish();
  }
  void run(const AttentionBackwardBf16Args& a) override {
    const auto& [dqkv, dout, qkv, att, B, Tn, C, H] = a;
    k::HostMirror h(s_);
    ops::attention_backward_bf16(h.io(dqkv, B * Tn * 3 * C), h.in(dout, B * Tn * C), h.in(qkv, B * Tn * 3 * C),
                                 h.in(att, B * H * Tn * Tn), B, Tn, C, H);
    h.finish();
  }

  // ---- convolution towers (ModifiedResNet): SLOW HOST FALLBACK, defined at the end ----
  void run(const Conv2dForwardArgs& a) override;
  void run(const Conv2dBackwardDataArgs& a) override;
  void run(const Conv2dBackwardWeightsArgs& a) override;
  void run(const BatchNormForwardArgs& a) override;
  void run(const BatchNormBackwardArgs& a) override;
  void run(const ReluForwardArgs& a) override;
  void run(const ReluBackwardArgs& a) override;
  void run(const AvgPoolForwardArgs& a) override;
  void run(const AvgPoolBackwardArgs& a) override;
  void run(const AttnPoolTokensForwardArgs& a) override;
  void run(const AttnPoolTokensBackwardArgs& a) override;

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
  // Checks a host index array (n values, each in [0, limit)) and copies it to device scratch.
  const int32_t* upload_index(std::span<const int32_t> idx, int64_t n, int64_t limit, const char* op);

  int device_ = 0;
  cudaStream_t s_ = nullptr;
  std::unique_ptr<k::LtContext> lt_;
  void* reduce_ = nullptr;
  std::mutex mu_;
  std::multimap<size_t, void*> cache_;  // freed blocks by bucket size
  std::map<void*, size_t> live_;        // allocated block -> bucket size
  std::vector<std::pair<void*, size_t>> scratch_ = std::vector<std::pair<void*, size_t>>(3, {nullptr, 0});
};

void CudaBackend::run(const AdamWStepSpansArgs& a) {
  const auto& [p, g, m, v, spans, lr, beta1, beta2, eps, step] = a;
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

const int32_t* CudaBackend::upload_index(std::span<const int32_t> idx, int64_t n, int64_t limit, const char* op) {
  OC_CHECK(int64_t(idx.size()) == n, "{}: {} indices where {} are needed", op, idx.size(), n);
  for (int64_t i = 0; i < n; ++i)
    OC_CHECK(idx[i] >= 0 && idx[i] < limit, "{}: index {} at {} outside [0, {})", op, idx[i], i, limit);
  void* d = scratch(size_t(n) * sizeof(int32_t), 1);
  copy_from_host(d, idx.data(), size_t(n) * sizeof(int32_t));
  return static_cast<const int32_t*>(d);
}

// ---- convolution towers: SLOW HOST FALLBACK (no CUDA kernels yet; docs/CUDA.md) ----
void CudaBackend::run(const Conv2dForwardArgs& a) {
  const ConvShape sh{a.N, a.H, a.W, a.C, a.OC, a.K, a.stride, a.pad};
  k::HostMirror h(s_);
  ops::conv2d_forward(h.io(a.out, sh.N * sh.OH() * sh.OW() * sh.OC), h.in(a.inp, sh.N * sh.H * sh.W * sh.C),
                      h.in(a.weight, sh.OC * sh.C * sh.K * sh.K), sh, a.prec);
  h.finish();
}
void CudaBackend::run(const Conv2dBackwardDataArgs& a) {
  const ConvShape sh{a.N, a.H, a.W, a.C, a.OC, a.K, a.stride, a.pad};
  k::HostMirror h(s_);
  ops::conv2d_backward_data(h.io(a.dinp, sh.N * sh.H * sh.W * sh.C), h.in(a.dout, sh.N * sh.OH() * sh.OW() * sh.OC),
                            h.in(a.weight, sh.OC * sh.C * sh.K * sh.K), sh, a.prec);
  h.finish();
}
void CudaBackend::run(const Conv2dBackwardWeightsArgs& a) {
  const ConvShape sh{a.N, a.H, a.W, a.C, a.OC, a.K, a.stride, a.pad};
  k::HostMirror h(s_);
  ops::conv2d_backward_weights(h.io(a.dweight, sh.OC * sh.C * sh.K * sh.K),
                               h.in(a.dout, sh.N * sh.OH() * sh.OW() * sh.OC), h.in(a.inp, sh.N * sh.H * sh.W * sh.C),
                               sh, a.prec);
  h.finish();
}
void CudaBackend::run(const BatchNormForwardArgs& a) {
  k::HostMirror h(s_);
  ops::batchnorm_forward(h.io(a.out, a.R * a.C), h.io(a.mean, a.C), h.io(a.rstd, a.C), h.io(a.running_mean, a.C),
                         h.io(a.running_var, a.C), h.in(a.inp, a.R * a.C), h.in(a.weight, a.C), h.in(a.bias, a.C), a.R,
                         a.C, a.eps, a.momentum, a.training);
  h.finish();
}
void CudaBackend::run(const BatchNormBackwardArgs& a) {
  k::HostMirror h(s_);
  ops::batchnorm_backward(h.io(a.dinp, a.R * a.C), h.io(a.dweight, a.C), h.io(a.dbias, a.C), h.in(a.dout, a.R * a.C),
                          h.in(a.inp, a.R * a.C), h.in(a.weight, a.C), h.in(a.mean, a.C), h.in(a.rstd, a.C), a.R, a.C,
                          a.training);
  h.finish();
}
void CudaBackend::run(const ReluForwardArgs& a) {
  k::HostMirror h(s_);
  float* out = h.io(a.out, a.n);
  ops::relu_forward(out, a.inp == a.out ? out : h.in(a.inp, a.n), a.n);
  h.finish();
}
void CudaBackend::run(const ReluBackwardArgs& a) {
  k::HostMirror h(s_);
  float* d = h.io(a.dinp, a.n);
  ops::relu_backward(d, a.dout == a.dinp ? d : h.in(a.dout, a.n), h.in(a.out, a.n), a.n);
  h.finish();
}
void CudaBackend::run(const AvgPoolForwardArgs& a) {
  k::HostMirror h(s_);
  ops::avg_pool_forward(h.io(a.out, a.N * (a.H / a.k) * (a.W / a.k) * a.C), h.in(a.inp, a.N * a.H * a.W * a.C), a.N,
                        a.H, a.W, a.C, a.k);
  h.finish();
}
void CudaBackend::run(const AvgPoolBackwardArgs& a) {
  k::HostMirror h(s_);
  ops::avg_pool_backward(h.io(a.dinp, a.N * a.H * a.W * a.C), h.in(a.dout, a.N * (a.H / a.k) * (a.W / a.k) * a.C), a.N,
                         a.H, a.W, a.C, a.k);
  h.finish();
}
void CudaBackend::run(const AttnPoolTokensForwardArgs& a) {
  k::HostMirror h(s_);
  ops::attnpool_tokens_forward(h.io(a.x, a.N * (a.HW + 1) * a.C), h.in(a.feat, a.N * a.HW * a.C),
                               h.in(a.pos, (a.HW + 1) * a.C), a.N, a.HW, a.C);
  h.finish();
}
void CudaBackend::run(const AttnPoolTokensBackwardArgs& a) {
  k::HostMirror h(s_);
  ops::attnpool_tokens_backward(h.io(a.dfeat, a.N * a.HW * a.C), h.io(a.dpos, (a.HW + 1) * a.C),
                                h.in(a.dx, a.N * (a.HW + 1) * a.C), a.N, a.HW, a.C);
  h.finish();
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace oc::ops
