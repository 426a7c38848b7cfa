// Kernel benchmarks of the ops at ViT-B-32 training shapes (batch 128: 50 tokens of width
// 768, 12 heads, MLP 3072). The GFLOP counter is a rate (GFLOP/s), 2 flops per multiply-add.
//   build/openclip_bench_kernels --benchmark_filter=Gemm
#include <benchmark/benchmark.h>

#include <vector>

#include "core/rng.h"
#include "ops/cpu/activation.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/dwconv.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/layernorm.h"

namespace {

using oc::ops::Prec;

constexpr int64_t kBatch = 128, kTokens = 50, kWidth = 768, kHeads = 12;

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  oc::Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = float(rng.normal());
  return v;
}

void set_gflops(benchmark::State& state, double flops_per_iter) {
  state.counters["GFLOP"] =
      benchmark::Counter(flops_per_iter * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// Linear forward: out[M,N] = x[M,K] @ W[N,K]^T with M = 128 * 50 rows.
void BM_Gemm(benchmark::State& state) {
  const int64_t M = kBatch * kTokens, K = state.range(0), N = state.range(1);
  const Prec prec = state.range(2) ? Prec::BF16 : Prec::F32;
  auto A = random_floats(M * K, 1), B = random_floats(N * K, 2);
  std::vector<float> C(static_cast<size_t>(M * N));
  for (auto _ : state) {
    oc::ops::gemm<float>(false, true, M, N, K, 1.0f, A.data(), K, B.data(), K, 0.0f, C.data(), N, prec);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * double(M) * double(N) * double(K));
  state.SetLabel(prec == Prec::BF16 ? "bf16" : "f32");
}
BENCHMARK(BM_Gemm)
    ->ArgNames({"K", "N", "bf16"})
    ->Args({768, 2304, 0})
    ->Args({768, 768, 0})
    ->Args({768, 3072, 0})
    ->Args({3072, 768, 0})
    ->Args({768, 2304, 1})
    ->Args({768, 768, 1})
    ->Args({768, 3072, 1})
    ->Args({3072, 768, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The two backward gemms of the same layer: dX = dY @ W (NN) and dW += dY^T @ X (TN).
void BM_GemmBackward(benchmark::State& state) {
  const int64_t M = kBatch * kTokens, K = state.range(0), N = state.range(1);
  auto dY = random_floats(M * N, 3), W = random_floats(N * K, 4), X = random_floats(M * K, 5);
  std::vector<float> dX(static_cast<size_t>(M * K)), dW(static_cast<size_t>(N * K));
  for (auto _ : state) {
    oc::ops::gemm<float>(false, false, M, K, N, 1.0f, dY.data(), N, W.data(), K, 0.0f, dX.data(), K);
    oc::ops::gemm<float>(true, false, N, K, M, 1.0f, dY.data(), N, X.data(), K, 1.0f, dW.data(), K);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 4.0 * double(M) * double(N) * double(K));
}
BENCHMARK(BM_GemmBackward)->ArgNames({"K", "N"})->Args({768, 3072})->Unit(benchmark::kMillisecond)->UseRealTime();

// Attention's per-head score gemms, QK^T for all 128 * 12 heads (T = 50, D = 64), through
// gemm_batched (range 0 = 1) or a loop of threaded gemm calls (range 0 = 0).
void BM_GemmBatchedHeads(benchmark::State& state) {
  const int64_t T = kTokens, D = kWidth / kHeads, BH = kBatch * kHeads, C3 = 3 * kWidth;
  auto qkv = random_floats(kBatch * T * C3, 6);
  std::vector<float> S(static_cast<size_t>(BH * T * T));
  for (auto _ : state) {
    if (state.range(0)) {
      // The 12 heads of one image are D columns apart: one batched call per image, so the
      // image's rows stay in cache across its heads (attention's order).
      for (int64_t b = 0; b < kBatch; ++b)
        oc::ops::gemm_batched<float>(kHeads, false, true, T, T, D, 1.0f, qkv.data() + b * T * C3, C3, D,
                                     qkv.data() + b * T * C3 + kWidth, C3, D, 0.0f, S.data() + b * kHeads * T * T,
                                     T, T * T);
    } else {
      for (int64_t bh = 0; bh < BH; ++bh) {
        const float* q = qkv.data() + (bh / kHeads) * T * C3 + (bh % kHeads) * D;
        oc::ops::gemm<float>(false, true, T, T, D, 1.0f, q, C3, q + kWidth, C3, 0.0f, S.data() + bh * T * T, T);
      }
    }
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * double(BH) * T * T * D);
  state.SetLabel(state.range(0) ? "gemm_batched" : "loop of gemm");
}
BENCHMARK(BM_GemmBatchedHeads)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Attention(benchmark::State& state) {
  const int64_t B = kBatch, T = kTokens, C = kWidth, H = kHeads, D = C / H;
  const bool backward = state.range(0);
  const Prec prec = state.range(1) ? Prec::BF16 : Prec::F32;
  auto qkv = random_floats(B * T * 3 * C, 7), dout = random_floats(B * T * C, 8);
  std::vector<float> out(static_cast<size_t>(B * T * C)), att(static_cast<size_t>(B * H * T * T)),
      dqkv(qkv.size()), scratch(att.size());
  for (auto _ : state) {
    oc::ops::attention_forward<float>(out.data(), att.data(), qkv.data(), B, T, C, H, false, prec);
    if (backward)
      oc::ops::attention_backward<float>(dqkv.data(), scratch.data(), dout.data(), qkv.data(), att.data(), B, T, C,
                                         H, false, prec);
    benchmark::ClobberMemory();
  }
  set_gflops(state, (backward ? 12.0 : 4.0) * double(B * H) * T * T * D);
  state.SetLabel(std::string(backward ? "fwd+bwd" : "fwd") + (prec == Prec::BF16 ? " bf16" : " f32"));
}
BENCHMARK(BM_Attention)
    ->ArgNames({"bwd", "bf16"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// amp_bf16 attention (attention_*_bf16) at batch 64, the batch of the amp_bf16 figures:
// vision (50 tokens, 768 wide, 12 heads) or text (77 tokens, 512 wide, 8 heads, causal). kernel
// 0 = what this CPU dispatches to (the AVX-512 kernel where it has AVX-512), 1 = the sgemm fallback.
// bwd 1 times the backward alone (the forward runs once before the loop).
void BM_AttentionBf16(benchmark::State& state) {
  const bool backward = state.range(0), text = state.range(1);
  const int64_t B = 64, T = text ? 77 : 50, C = text ? 512 : 768, H = text ? 8 : 12, D = C / H;
  oc::ops::cpu::set_attention_bf16_fallback(state.range(2));
  auto to16 = [](const std::vector<float>& f) {
    std::vector<oc::bf16> r(f.size());
    for (size_t i = 0; i < f.size(); ++i) r[i] = oc::to_bf16(f[i]);
    return r;
  };
  auto qkv = to16(random_floats(B * T * 3 * C, 7)), dout = to16(random_floats(B * T * C, 8));
  std::vector<oc::bf16> out(static_cast<size_t>(B * T * C));
  std::vector<float> att(static_cast<size_t>(B * H * T * T)), dqkv(qkv.size());
  oc::ops::attention_forward_bf16(out.data(), att.data(), qkv.data(), B, T, C, H, text);
  for (auto _ : state) {
    if (backward)
      oc::ops::attention_backward_bf16(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, H);
    else
      oc::ops::attention_forward_bf16(out.data(), att.data(), qkv.data(), B, T, C, H, text);
    benchmark::ClobberMemory();
  }
  set_gflops(state, (backward ? 8.0 : 4.0) * double(B * H) * T * T * D);
  state.SetLabel(std::string(backward ? "bwd " : "fwd ") + (text ? "text " : "vision ") +
                 oc::ops::cpu::attention_bf16_kernel());
  oc::ops::cpu::set_attention_bf16_fallback(false);
}
BENCHMARK(BM_AttentionBf16)
    ->ArgNames({"bwd", "text", "sgemm"})
    ->ArgsProduct({{0, 1}, {0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// LayerNorm forward + backward over the 6400 x 768 residual stream; bytes counts the
// minimum traffic (fwd: read x, write y; bwd: read x, dy, read+write dx).
void BM_LayerNorm(benchmark::State& state) {
  const int64_t N = kBatch * kTokens, C = kWidth;
  auto x = random_floats(N * C, 9), w = random_floats(C, 10), b = random_floats(C, 11), dy = random_floats(N * C, 12);
  std::vector<float> y(x.size()), mean(N), rstd(N), dx(x.size()), dw(C), db(C);
  for (auto _ : state) {
    oc::ops::layernorm_forward<float>(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
    oc::ops::layernorm_backward<float>(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(),
                                       rstd.data(), N, C);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * N * C * 6 * int64_t(sizeof(float)));
}
BENCHMARK(BM_LayerNorm)->Unit(benchmark::kMillisecond)->UseRealTime();

// GELU over the MLP hidden activations (6400 x 3072), forward then backward.
void BM_Gelu(benchmark::State& state) {
  const int64_t n = kBatch * kTokens * 4 * kWidth;
  const auto act = state.range(0) ? oc::ops::Act::QuickGelu : oc::ops::Act::Gelu;
  auto x = random_floats(n, 13), dy = random_floats(n, 14);
  std::vector<float> y(x.size()), dx(x.size());
  for (auto _ : state) {
    oc::ops::act_forward<float>(y.data(), x.data(), n, act);
    oc::ops::act_backward<float>(dx.data(), dy.data(), x.data(), n, act);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * n);
  state.SetLabel(state.range(0) ? "quickgelu fwd+bwd" : "gelu fwd+bwd");
}
BENCHMARK(BM_Gelu)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// ConvNeXt-B's depthwise conv at stage 0 (batch 8 at 224 px: 56 x 56 x 128, 7x7, pad 3):
// forward, backward data, backward weights + bias (arg 0, 1, 2). 49 multiply-adds per output.
// The comparison: torch.nn.functional.conv2d(x, w, b, padding=3, groups=128) and its
// gradients on a channels_last tensor of the same shape, at the same thread count.
void BM_DwConv(benchmark::State& state) {
  const oc::ops::DwConvShape s{8, 56, 56, 128, 7, 3};
  auto x = random_floats(s.in_size(), 15), w = random_floats(s.weight_size(), 16), b = random_floats(s.C, 17);
  std::vector<float> y(static_cast<size_t>(s.out_size())), dw(w.size()), db(b.size());
  for (auto _ : state) {
    if (state.range(0) == 0) oc::ops::dwconv2d_forward<float>(y.data(), x.data(), w.data(), b.data(), s);
    if (state.range(0) == 1) oc::ops::dwconv2d_backward_data<float>(y.data(), x.data(), w.data(), s);
    if (state.range(0) == 2) oc::ops::dwconv2d_backward_weights<float>(dw.data(), db.data(), x.data(), x.data(), s);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 2.0 * 49 * double(s.out_size()));
  state.SetLabel(state.range(0) == 0 ? "forward" : state.range(0) == 1 ? "backward data" : "backward weights");
}
BENCHMARK(BM_DwConv)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
