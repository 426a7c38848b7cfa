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
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <type_traits>
#include <vector>

#include "core/bf16.h"
#include "core/machine.h"
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

// The attainable peak of this CPU, measured rather than computed from /proc/cpuinfo's nominal
// clock (a boosting core beats that "peak"; Zen 4 runs 512-bit FMAs on 256-bit pipes): on every
// OpenMP thread, 12 independent register accumulators (enough to cover a 4-cycle FMA latency on
// two pipes), no memory traffic. fp32: vfmadd (16 lanes x 2 flops with AVX-512, 8 with AVX2);
// bf16: vdpbf16ps (16 lanes x 2 products x 2 flops). gemm_table.py divides by these.
constexpr int kAcc = 12;
__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iters) {
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(1e-3f * float(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 12  // unrolled, the accumulators live in registers (no store-forwarding chain)
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  float out[8], sum = 0;
  for (int i = 0; i < kAcc; ++i) {
    _mm256_storeu_ps(out, acc[i]);
    for (float v : out) sum += v;
  }
  return sum;
}
__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iters) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(1e-3f * float(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 12  // unrolled, the accumulators live in registers (no store-forwarding chain)
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  float sum = 0;
  for (int i = 0; i < kAcc; ++i) sum += _mm512_reduce_add_ps(acc[i]);
  return sum;
}
__attribute__((target("avx512f,avx512bf16"))) float dpbf16_chains(int64_t iters) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(1e-3f * float(i));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3a83);  // 1.0, ~1e-3
  for (int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 12  // unrolled, the accumulators live in registers (no store-forwarding chain)
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  float sum = 0;
  for (int i = 0; i < kAcc; ++i) sum += _mm512_reduce_add_ps(acc[i]);
  return sum;
}

// AMX: six tile accumulators (tdpbf16ps' / tdpbssd's latency is several issue intervals) fed
// by the same two operand tiles, loaded once: the tile unit's peak, no memory traffic. One
// instruction is 16 x 16 x 32 bf16 products (int8: x 64). Linux grants the tile state on
// request (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
constexpr int kTileAcc = 6;
bool amx_permitted() { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }
struct alignas(64) TileConfig {
  uint8_t palette_id = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) float amx_chains(int64_t iters, bool int8) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  __asm__ __volatile__("" : : "r"(&cfg) : "memory");  // _tile_loadconfig declares an 8-byte read
  _tile_loadconfig(&cfg);
  alignas(64) uint8_t ab[1024];
  for (int i = 0; i < 1024; ++i) ab[i] = uint8_t(i % 2 ? 0x3f : 0x01);  // bf16 ~0.5, int8 1 / 63
  _tile_loadd(6, ab, 64);
  _tile_loadd(7, ab, 64);
  _tile_zero(0);  // (GCC's tile intrinsics are asm statements: one per line)
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  if (int8)
    for (int64_t it = 0; it < iters; ++it) {
      _tile_dpbssd(0, 6, 7);
      _tile_dpbssd(1, 6, 7);
      _tile_dpbssd(2, 6, 7);
      _tile_dpbssd(3, 6, 7);
      _tile_dpbssd(4, 6, 7);
      _tile_dpbssd(5, 6, 7);
    }
  else
    for (int64_t it = 0; it < iters; ++it) {
      _tile_dpbf16ps(0, 6, 7);
      _tile_dpbf16ps(1, 6, 7);
      _tile_dpbf16ps(2, 6, 7);
      _tile_dpbf16ps(3, 6, 7);
      _tile_dpbf16ps(4, 6, 7);
      _tile_dpbf16ps(5, 6, 7);
    }
  alignas(64) float out[256];
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}

// kind 0: fp32 FMA (the widest this CPU has), 1: bf16 dot products (skipped without
// AVX512-BF16), 2 / 3: AMX bf16 / int8 tile products (skipped without AMX).
void BM_FmaPeak(benchmark::State& state, int kind) {
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (kind == 1 && !(avx512 && __builtin_cpu_supports("avx512bf16"))) {
    state.SkipWithError("no AVX512-BF16");
    return;
  }
  const oc::MachineInfo m = oc::machine_info();
  if (kind >= 2 && !(m.amx_tile && (kind == 2 ? m.amx_bf16 : m.amx_int8) && amx_permitted())) {
    state.SkipWithError("no AMX");
    return;
  }
  const int64_t iters = kind >= 2 ? 1 << 14 : 1 << 20;
  const int threads = omp_get_max_threads();
  float sink = 0;
  for (auto _ : state) {
#pragma omp parallel reduction(+ : sink)
    sink += kind >= 2     ? amx_chains(iters, kind == 3)
            : kind == 1   ? dpbf16_chains(iters)
            : avx512      ? fma_chains_avx512(iters)
                          : fma_chains_avx2(iters);
    benchmark::DoNotOptimize(sink);
  }
  // products per instruction, instructions per iteration
  const double lanes = kind == 3 ? 16 * 16 * 64 : kind == 2 ? 16 * 16 * 32 : kind == 1 ? 32 : avx512 ? 16 : 8;
  const double per_iter = kind >= 2 ? kTileAcc : kAcc;
  state.counters[kind == 3 ? "TOPs" : "TFLOPs"] = benchmark::Counter(
      2e-12 * lanes * per_iter * double(iters) * threads, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(kind == 3 ? "tdpbssd" : kind == 2 ? "tdpbf16ps" : kind == 1 ? "vdpbf16ps" : avx512 ? "vfmadd zmm" : "vfmadd ymm");
}
BENCHMARK_CAPTURE(BM_FmaPeak, fp32, 0)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FmaPeak, bf16, 1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FmaPeak, amx_bf16, 2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FmaPeak, amx_int8, 3)->UseRealTime()->Unit(benchmark::kMillisecond);

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
