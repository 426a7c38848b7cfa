// The CUDA backend: device memory (cudaMalloc with a size-bucketed cache), one stream, GEMMs
// on cuBLASLt (plans cached per shape), CUDA kernels for every op (the composite ones in
// fused_ops.cpp, conv_ops.cpp). No op runs on the host.
// Written and compiled on machines without a GPU; first ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <span>

#include "ops/cuda/batch_upload.h"
#include "ops/cuda/conv_ops.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/device_ctx.h"
#include "ops/cuda/fused_ops.h"
#include "ops/cuda/gemm_lt.h"
#include "ops/cuda/kernels.h"
#include "ops/cuda/kernels_conv.h"
#include "ops/cuda/kernels_eva.h"

namespace oc::ops {
namespace {

namespace k = cuda;
#define OC_LAUNCHED() OC_CUDA_CHECK(cudaGetLastError())  // after every kernel launch

void check_pool(int64_t H, int64_t W, int64_t win, const char* op) {
  OC_CHECK(win > 0 && H >= win && W >= win, "{}: window {} larger than the input {}x{}", op, win, H, W);
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int device) : device_(device) {
    OC_CUDA_CHECK(cudaSetDevice(device_));
    OC_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    lt_ = std::make_unique<k::LtContext>();
    lt_->set_allow_tf32(cuda_allow_tf32());  // OPENCLIP_ALLOW_TF32=1, or --allow-tf32 later
    pool_ = std::make_unique<k::ScratchPool>(s_, device_);
    int smem = 0;
    OC_CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device_));
    ctx_ = std::make_unique<k::DeviceCtx>(k::DeviceCtx{s_, *lt_, *pool_, size_t(smem)});
    OC_CUDA_CHECK(cudaMalloc(&reduce_, (k::kReduceBlocks + 2) * sizeof(double)));
    uploads_ = std::make_unique<k::Uploader>(device_, s_);
  }
  ~CudaBackend() override {
    uploads_.reset();
    cudaStreamSynchronize(s_);
    for (auto& [bytes, p] : cache_) cudaFree(p);
    cudaFree(reduce_);
    ctx_.reset();
    pool_.reset();
    lt_.reset();
    cudaStreamDestroy(s_);
  }
  void* device_stream() override { return s_; }
  void set_allow_tf32(bool on) override { lt_->set_allow_tf32(on || cuda_allow_tf32()); }
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

  // ---- batches: pinned host buffers, uploads on a second stream (batch_upload.h) ----
  HostAllocator& host_allocator() override { return k::pinned_host_allocator(device_); }
  Prefetch prefetch(const void* host, size_t bytes, std::string_view /*what*/) override {
    const k::Uploader::Started u = uploads_->start(host, bytes);
    return make_prefetch(u.data, bytes, u.slot);
  }
  void run(const NormalizeImagesArgs& a) override {
    OC_CHECK(a.mean.size() == 3 && a.std.size() == 3, "normalize_images: {} means and {} stds, want 3",
             a.mean.size(), a.std.size());
    k::normalize_images(a.out, a.px, a.mean.data(), a.std.data(), a.B, a.S, s_);
    OC_LAUNCHED();
  }

  // ---- dense: cuBLASLt, fp32 compute without TF32 ----
  void run(const GemmArgs& a) override {
    const auto& [ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, prec] = a;
    run(GemmBatchedArgs{.batch = 1, .ta = ta, .tb = tb, .M = M, .N = N, .K = K, .alpha = alpha, .A = A, .lda = lda,
                        .stride_a = 0, .B = B, .ldb = ldb, .stride_b = 0, .beta = beta, .C = C, .ldc = ldc,
                        .stride_c = 0, .prec = prec});
  }
  void run(const GemmBatchedArgs& a) override { k::gemm_batched(*ctx_, a); }
  void run(const LinearForwardArgs& a) override { k::linear_forward(*ctx_, a); }
  void run(const LinearBackwardArgs& a) override {
    const auto& [dinp, dweight, dbias, dout, inp, weight, M, K, N, prec] = a;
    if (dinp)
      run(GemmArgs{.ta = false, .tb = false, .M = M, .N = K, .K = N, .alpha = 1.0f, .A = dout, .lda = N, .B = weight,
                   .ldb = K, .beta = 0.0f, .C = dinp, .ldc = K, .prec = prec});
    if (dweight)
      run(GemmArgs{.ta = true, .tb = false, .M = N, .N = K, .K = M, .alpha = 1.0f, .A = dout, .lda = N, .B = inp,
                   .ldb = K, .beta = 1.0f, .C = dweight, .ldc = K, .prec = prec});
    if (dbias) {
      k::col_sums_acc(dbias, pool_->get<double>(k::Slot::ColumnParts, k::kColChunks * N), dout, M, N, s_);
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
    if (dw)
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
    double* partial = pool_->get<double>(k::Slot::ColumnParts, 2 * k::kColChunks * C);
    k::layernorm_backward_dwdb(dweight, dbias, partial, dout, inp, mean, rstd, N, C, s_); OC_LAUNCHED();
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

  // ---- attention: one block per (batch, head) (kernels_attention.cu), the strided-row
  // kernels (kernels_xattn.cu) for sequences too long for its shared memory and cross attention ----
  void run(const AttentionForwardArgs& a) override { k::attention_forward(*ctx_, a); }
  void run(const AttentionBackwardArgs& a) override { k::attention_backward(*ctx_, a); }
  void run(const CrossAttentionForwardArgs& a) override { k::cross_attention_forward(*ctx_, a); }
  void run(const CrossAttentionBackwardArgs& a) override { k::cross_attention_backward(*ctx_, a); }

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

  // ---- losses: kernels and cuBLASLt (fused_ops.cpp) ----
  void run(const L2NormForwardArgs& a) override {
    const auto& [out, norm, inp, N, C] = a;
    k::l2norm_forward(out, norm, inp, N, C, s_); OC_LAUNCHED();
  }
  void run(const L2NormBackwardArgs& a) override {
    const auto& [dinp, dout, out, norm, N, C] = a;
    k::l2norm_backward(dinp, dout, out, norm, N, C, s_); OC_LAUNCHED();
  }
  double run(const ClipLossArgs& a) override { return k::clip_loss(*ctx_, a); }
  double run(const SiglipLossArgs& a) override { return k::siglip_loss(*ctx_, a); }

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

  // ---- amp_bf16: GEMMs on cuBLASLt (bf16 inputs, fp32 accumulation); fused passes and
  // attention: kernels (fused_ops.cpp) ----
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
    float* tmp = pool_->get<float>(k::Slot::GemmOut, M * N);  // fp32 result, rounded once after the epilogue
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
  void run(const LayerNormForwardBf16Args& a) override { k::layernorm_forward_bf16(*ctx_, a); }
  void run(const AddLayerNormForwardBf16Args& a) override { k::add_layernorm_forward_bf16(*ctx_, a); }
  void run(const ActForwardBf16Args& a) override { k::act_forward_bf16(*ctx_, a); }
  void run(const ActBackwardBf16Args& a) override { k::act_backward_bf16(*ctx_, a); }
  void run(const ActValueGradBf16Args& a) override { k::act_value_grad_bf16(*ctx_, a); }
  void run(const BiasGradToBf16Args& a) override { k::bias_grad_to_bf16(*ctx_, a); }
  void run(const AttentionForwardBf16Args& a) override { k::attention_forward_bf16(*ctx_, a); }
  void run(const AttentionBackwardBf16Args& a) override { k::attention_backward_bf16(*ctx_, a); }

  // ---- convolution towers (ModifiedResNet): im2col + cuBLASLt and kernels (conv_ops.cpp,
  // kernels_conv.cu, kernels_convnet.cu), defined at the end ----
  void run(const Conv2dForwardArgs& a) override;
  void run(const Conv2dBackwardDataArgs& a) override;
  void run(const Conv2dBackwardWeightsArgs& a) override;
  void run(const DwConv2dForwardArgs& a) override { k::dwconv2d_forward(*ctx_, a); }
  void run(const DwConv2dBackwardDataArgs& a) override { k::dwconv2d_backward_data(*ctx_, a); }
  void run(const DwConv2dBackwardWeightsArgs& a) override { k::dwconv2d_backward_weights(*ctx_, a); }
  void run(const BatchNormForwardArgs& a) override;
  void run(const BatchNormBackwardArgs& a) override;
  void run(const ReluForwardArgs& a) override;
  void run(const ReluBackwardArgs& a) override;
  void run(const AvgPoolForwardArgs& a) override;
  void run(const AvgPoolBackwardArgs& a) override;
  void run(const AttnPoolTokensForwardArgs& a) override;
  void run(const AttnPoolTokensBackwardArgs& a) override;

  // ---- EVA02 towers: rotary embedding and SwiGLU (kernels_eva.cu), defined at the end ----
  void run(const RopeForwardArgs& a) override;
  void run(const RopeBackwardArgs& a) override;
  void run(const SwigluForwardArgs& a) override;
  void run(const SwigluBackwardArgs& a) override;

 protected:
  void* allocate(size_t bytes) override;
  void release(void* p) override;
  std::string alloc_failure_hint(size_t bytes) override;
  void await_prefetch(int slot) override { uploads_->await(slot); }
  void end_prefetch(int slot) noexcept override {
    if (uploads_) uploads_->release(slot);  // a handle outliving the backend has nothing left to release
  }

 private:
  static size_t bucket(size_t bytes) {  // 512 B granularity below 1 MiB, 2 MiB above
    const size_t g = bytes < (size_t(1) << 20) ? 512 : (size_t(2) << 20);
    return (bytes + g - 1) / g * g;
  }
  // Checks a host index array (n values, each in [0, limit)) and copies it to device scratch.
  const int32_t* upload_index(std::span<const int32_t> idx, int64_t n, int64_t limit, const char* op);

  int device_ = 0;
  cudaStream_t s_ = nullptr;
  std::unique_ptr<k::LtContext> lt_;
  std::unique_ptr<k::ScratchPool> pool_;
  std::unique_ptr<k::DeviceCtx> ctx_;
  void* reduce_ = nullptr;
  std::unique_ptr<k::Uploader> uploads_;
  std::mutex mu_;
  std::multimap<size_t, void*> cache_;  // freed blocks by bucket size
  std::map<void*, size_t> live_;        // allocated block -> bucket size
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
  auto* dchunks = static_cast<k::AdamWChunk*>(pool_->get(k::Slot::AdamChunks, chunks.size() * sizeof(k::AdamWChunk)));
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

std::string CudaBackend::alloc_failure_hint(size_t) { return k::gpu_memory_hint(device_); }

const int32_t* CudaBackend::upload_index(std::span<const int32_t> idx, int64_t n, int64_t limit, const char* op) {
  OC_CHECK(int64_t(idx.size()) == n, "{}: {} indices where {} are needed", op, idx.size(), n);
  for (int64_t i = 0; i < n; ++i)
    OC_CHECK(idx[i] >= 0 && idx[i] < limit, "{}: index {} at {} outside [0, {})", op, idx[i], i, limit);
  void* d = pool_->get(k::Slot::Index, size_t(n) * sizeof(int32_t));
  copy_from_host(d, idx.data(), size_t(n) * sizeof(int32_t));
  return static_cast<const int32_t*>(d);
}

// ---- convolution towers ----
void CudaBackend::run(const Conv2dForwardArgs& a) { k::conv2d_forward(*ctx_, a); }
void CudaBackend::run(const Conv2dBackwardDataArgs& a) { k::conv2d_backward_data(*ctx_, a); }
void CudaBackend::run(const Conv2dBackwardWeightsArgs& a) { k::conv2d_backward_weights(*ctx_, a); }
void CudaBackend::run(const BatchNormForwardArgs& a) { k::batchnorm_forward(*ctx_, a); }
void CudaBackend::run(const BatchNormBackwardArgs& a) { k::batchnorm_backward(*ctx_, a); }
void CudaBackend::run(const ReluForwardArgs& a) {
  k::relu_forward(a.out, a.inp, a.n, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const ReluBackwardArgs& a) {
  k::relu_backward(a.dinp, a.dout, a.out, a.n, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const AvgPoolForwardArgs& a) {
  check_pool(a.H, a.W, a.k, "avg_pool_forward");
  k::avg_pool_forward(a.out, a.inp, a.N, a.H, a.W, a.C, a.k, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const AvgPoolBackwardArgs& a) {
  check_pool(a.H, a.W, a.k, "avg_pool_backward");
  k::avg_pool_backward(a.dinp, a.dout, a.N, a.H, a.W, a.C, a.k, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const AttnPoolTokensForwardArgs& a) {
  OC_CHECK(a.HW > 0 && a.C > 0, "attnpool_tokens_forward: bad shape HW={} C={}", a.HW, a.C);
  k::attnpool_tokens_forward(a.x, a.feat, a.pos, a.N, a.HW, a.C, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const AttnPoolTokensBackwardArgs& a) {
  OC_CHECK(a.HW > 0 && a.C > 0, "attnpool_tokens_backward: bad shape HW={} C={}", a.HW, a.C);
  k::attnpool_tokens_backward(a.dfeat, a.dpos, a.dx, a.N, a.HW, a.C, s_);
  OC_LAUNCHED();
}


// ---- EVA02 towers ----
void check_rope(int64_t W, int64_t H, int64_t T, int64_t prefix) {
  OC_CHECK(H > 0 && W % H == 0 && (W / H) % 2 == 0 && prefix >= 0 && prefix <= T,
           "rope: bad shape W={} H={} T={} prefix={}", W, H, T, prefix);
}
void CudaBackend::run(const RopeForwardArgs& a) {
  check_rope(a.W, a.H, a.T, a.prefix);
  k::rope_rotate(a.qkv, a.sincos, a.B, a.T, a.W, a.H, a.prefix, false, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const RopeBackwardArgs& a) {
  check_rope(a.W, a.H, a.T, a.prefix);
  k::rope_rotate(a.dqkv, a.sincos, a.B, a.T, a.W, a.H, a.prefix, true, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const SwigluForwardArgs& a) {
  k::swiglu_forward(a.out, a.gate, a.x, a.n, s_);
  OC_LAUNCHED();
}
void CudaBackend::run(const SwigluBackwardArgs& a) {
  k::swiglu_backward(a.dgate, a.dx, a.dout, a.gate, a.x, a.n, s_);
  OC_LAUNCHED();
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(cuda_device_index()); }

}  // namespace oc::ops
