// Every linear GEMM of a ViT-B-32 training step at batch 64, in its three passes and both
// precisions: the figures that pick the GEMM library (docs/BENCHMARKS.md, "GEMM shapes").
//   forward   y[M,N]  = x[M,K] @ W[N,K]^T   (NT)
//   bwd-data  dx[M,K] = dy[M,N] @ W[N,K]     (NN)
//   bwd-wgt   dW[N,K] += dy[M,N]^T @ x[M,K]  (TN, accumulating: beta = 1)
// fp32 runs gemm<float>; bf16 runs gemm_bf16 on bf16 operands as amp_bf16 does (forward
// stores bf16, the data gradient fp32, the weight gradient accumulates in fp32).
// The TFLOPs counter is a rate (2 flops per multiply-add).
//   build/openclip_bench_kernels --benchmark_filter=GemmShape/          (2 threads, wall time)
//   OMP_NUM_THREADS=1 build/openclip_bench_kernels --benchmark_filter=GemmShapeCpu/   (one core)
#include <benchmark/benchmark.h>

#include <string>
#include <type_traits>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/gemm.h"
#include "ops/dnnl_info.h"

namespace {

struct Shape {
  const char* name;
  int64_t M, K, N;  // rows (batch x tokens), input width, output width
};

// Batch 64: the image tower sees 50 tokens (49 patches + class), the text tower 77.
constexpr int64_t kB = 64, kImg = kB * 50, kTxt = kB * 77;
constexpr Shape kShapes[] = {
    {"img_patch", kB * 49, 3 * 32 * 32, 768}, {"img_qkv", kImg, 768, 2304}, {"img_out", kImg, 768, 768},
    {"img_fc", kImg, 768, 3072},              {"img_proj", kImg, 3072, 768}, {"txt_qkv", kTxt, 512, 1536},
    {"txt_out", kTxt, 512, 512},              {"txt_fc", kTxt, 512, 2048},   {"txt_proj", kTxt, 2048, 512},
    {"img_head", kB, 768, 512},               {"txt_head", kB, 512, 512},
};
enum Pass { kFwd, kBwdData, kBwdWeight };
constexpr const char* kPassName[] = {"fwd", "bwd_data", "bwd_weight"};
constexpr const char* kPrecName[] = {"f32", "bf16", "bf16_widened"};

template <typename T>
std::vector<T> random_values(int64_t n, uint64_t seed) {
  oc::Rng rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, oc::bf16>) x = oc::to_bf16(float(rng.normal()));
    else x = float(rng.normal());
  }
  return v;
}

void run_f32(benchmark::State& state, const Shape& s, Pass p) {
  const int64_t M = s.M, K = s.K, N = s.N;
  auto x = random_values<float>(M * K, 1), w = random_values<float>(N * K, 2), dy = random_values<float>(M * N, 3);
  std::vector<float> y(size_t(M * N)), dx(size_t(M * K)), dw(size_t(N * K));
  for (auto _ : state) {
    if (p == kFwd) oc::ops::gemm<float>(false, true, M, N, K, 1.0f, x.data(), K, w.data(), K, 0.0f, y.data(), N);
    if (p == kBwdData) oc::ops::gemm<float>(false, false, M, K, N, 1.0f, dy.data(), N, w.data(), K, 0.0f, dx.data(), K);
    if (p == kBwdWeight) oc::ops::gemm<float>(true, false, N, K, M, 1.0f, dy.data(), N, x.data(), K, 1.0f, dw.data(), K);
    benchmark::ClobberMemory();
  }
}

void run_bf16(benchmark::State& state, const Shape& s, Pass p) {
  using oc::bf16;
  const int64_t M = s.M, K = s.K, N = s.N;
  auto x = random_values<bf16>(M * K, 1), w = random_values<bf16>(N * K, 2), dy = random_values<bf16>(M * N, 3);
  std::vector<bf16> y(size_t(M * N));
  std::vector<float> dx(size_t(M * K)), dw(size_t(N * K));
  oc::ops::Epilogue acc;
  acc.beta = 1.0f;
  for (auto _ : state) {
    if (p == kFwd) oc::ops::gemm_bf16(false, true, M, N, K, x.data(), K, w.data(), K, y.data(), N);
    if (p == kBwdData) oc::ops::gemm_bf16(false, false, M, K, N, dy.data(), N, w.data(), K, dx.data(), K);
    if (p == kBwdWeight) oc::ops::gemm_bf16(true, false, N, K, M, dy.data(), N, x.data(), K, dw.data(), K, acc);
    benchmark::ClobberMemory();
  }
}

// prec: 0 fp32, 1 bf16 on oneDNN's bf16 matmul (where the CPU has native bf16), 2 bf16 with the
// operands widened to fp32 and sgemm (same products; the automatic choice without AMX).
void BM_GemmShape(benchmark::State& state, Shape s, Pass p, int prec) {
  oc::ops::cpu::set_bf16_gemm_fallback(prec == 2);
  oc::ops::cpu::set_bf16_gemm_native(prec == 1);
  if (prec) run_bf16(state, s, p);
  else run_f32(state, s, p);
  oc::ops::cpu::set_bf16_gemm_fallback(false);
  oc::ops::cpu::set_bf16_gemm_native(false);
  state.counters["TFLOPs"] =
      benchmark::Counter(2e-12 * double(s.M) * double(s.N) * double(s.K), benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(oc::ops::dnnl_isa());
}

// Registered at static initialisation: BM_GemmShape/<shape>/<pass>/<precision> per second of
// wall time, and BM_GemmShapeCpu/... per CPU-second of the process: on a shared, loaded machine
// the latter with OMP_NUM_THREADS=1 is one core's throughput, whatever else runs beside it.
const bool kRegistered = [] {
  for (bool cpu_time : {false, true})
    for (const Shape& s : kShapes)
      for (Pass p : {kFwd, kBwdData, kBwdWeight})
        for (int prec : {0, 1, 2}) {
          std::string name = std::string(cpu_time ? "BM_GemmShapeCpu/" : "BM_GemmShape/") + s.name + "/" +
                             kPassName[p] + "/" + kPrecName[prec];
          auto* b = benchmark::RegisterBenchmark(name.c_str(), BM_GemmShape, s, p, prec)->Unit(benchmark::kMillisecond);
          if (cpu_time) b->MeasureProcessCPUTime();
          else b->UseRealTime();
        }
  return true;
}();

}  // namespace
