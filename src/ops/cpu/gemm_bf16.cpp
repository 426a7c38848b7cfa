// gemm_bf16 on the CPU. Native bf16 (AVX512-BF16 / AMX): one oneDNN matmul primitive per
// (shape, strides, epilogue), created once per thread and reused, with bias, sum and
// GELU/QuickGELU as oneDNN post-ops, bf16 x bf16 -> fp32 accumulation -> fp32 or bf16 dst.
// Elsewhere: the bf16 operands are widened to fp32 (exact) and run through dnnl_sgemm, the
// epilogue applied in a pass over C; the same products and fp32 accumulation.
#include "ops/cpu/gemm_bf16.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

#include "core/check.h"
#include "ops/cpu/activation.h"
#include "ops/cpu/bf16_convert.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/dnnl_act.h"
#include "ops/cpu/gemm.h"
#include "ops/cpu/scratch.h"
#include "ops/dnnl_info.h"

namespace oc::ops {
namespace cpu {
namespace {

bool g_force_fallback = false, g_force_native = false;  // test and benchmark hooks

bool use_native() {
  static const bool chosen = bf16_gemm_native(), capable = native_bf16();
  if (g_force_fallback) return false;
  return g_force_native ? capable : chosen;
}

void check_layout(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc) {
  OC_CHECK(M >= 0 && N >= 0 && K >= 0, "gemm_bf16: negative size M={} N={} K={}", M, N, K);
  OC_CHECK(lda >= std::max<int64_t>(1, ta ? M : K), "gemm_bf16: lda={} too small (M={} K={} trans_a={})", lda, M, K,
           ta);
  OC_CHECK(ldb >= std::max<int64_t>(1, tb ? K : N), "gemm_bf16: ldb={} too small (K={} N={} trans_b={})", ldb, K, N,
           tb);
  OC_CHECK(ldc >= std::max<int64_t>(1, N), "gemm_bf16: ldc={} too small (N={})", ldc, N);
}

// Runs f(r) for r in [0, rows), threaded when called outside a parallel region on enough work.
template <class F>
void rows_loop(int64_t rows, int64_t cols, F f) {
  if (!omp_in_parallel() && rows * cols >= (int64_t(1) << 15)) {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) f(r);
  } else {
    for (int64_t r = 0; r < rows; ++r) f(r);
  }
}

// The epilogue on an fp32 C (fallback path): bias, then the activation.
void epilogue_pass(float* C, int64_t ldc, int64_t M, int64_t N, const Epilogue& e) {
  if (!e.bias && !e.act) return;
  rows_loop(M, N, [&](int64_t i) {
    float* c = C + i * ldc;
    if (e.bias) {
#pragma omp simd
      for (int64_t j = 0; j < N; ++j) c[j] += e.bias[j];
    }
    if (e.act) act_forward<float>(c, c, N, e.act_fn);
  });
}

// Rows of C (or, with A transposed, of the reduction) per sgemm call on widened operands: the
// fp32 copies stay a few MiB instead of the whole of a [12800, 3072] activation at batch 256
// (docs/BENCHMARKS.md, "GEMM shapes": peak RSS of amp_bf16 training at batch 256).
constexpr int64_t kWidenBlock = 1024;

// Fallback: C(fp32) = epilogue(widen(A) @ widen(B)), in blocks.
void gemm_widened(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
                  int64_t ldb, float* C, int64_t ldc, const Epilogue& e) {
  if (!ta) {  // B widened once; A and C in blocks of rows
    const int64_t b_rows = tb ? N : K, b_cols = tb ? K : N;
    float* b = thread_scratch<float>(Scratch::GemmB, size_t(b_rows * b_cols));
    rows_loop(b_rows, b_cols, [&](int64_t r) { widen_row(b + r * b_cols, B + r * ldb, b_cols); });
    for (int64_t i0 = 0; i0 < M; i0 += kWidenBlock) {
      const int64_t m = std::min(kWidenBlock, M - i0);
      float* a = thread_scratch<float>(Scratch::GemmA, size_t(m * K));
      rows_loop(m, K, [&](int64_t r) { widen_row(a + r * K, A + (i0 + r) * lda, K); });
      dnnl_status_t st = dnnl_sgemm('N', tb ? 'T' : 'N', m, N, K, 1.0f, a, K, b, b_cols, e.beta, C + i0 * ldc, ldc);
      OC_CHECK(st == dnnl_success, "dnnl_sgemm failed (status {}) for M={} N={} K={}", int(st), m, N, K);
    }
  } else {  // A is [K, M]: blocks of the reduction, accumulated into C
    for (int64_t k0 = 0; k0 < K; k0 += kWidenBlock) {
      const int64_t k = std::min(kWidenBlock, K - k0), b_rows = tb ? N : k, b_cols = tb ? k : N;
      float* a = thread_scratch<float>(Scratch::GemmA, size_t(k * M));
      float* b = thread_scratch<float>(Scratch::GemmB, size_t(b_rows * b_cols));
      rows_loop(k, M, [&](int64_t r) { widen_row(a + r * M, A + (k0 + r) * lda, M); });
      rows_loop(b_rows, b_cols,
                [&](int64_t r) { widen_row(b + r * b_cols, tb ? B + r * ldb + k0 : B + (k0 + r) * ldb, b_cols); });
      dnnl_status_t st = dnnl_sgemm('T', tb ? 'T' : 'N', M, N, k, 1.0f, a, M, b, b_cols, k0 == 0 ? e.beta : 1.0f, C, ldc);
      OC_CHECK(st == dnnl_success, "dnnl_sgemm failed (status {}) for M={} N={} K={}", int(st), M, N, k);
    }
  }
  epilogue_pass(C, ldc, M, N, e);
}

struct Key {
  int64_t M, N, K, lda, ldb, ldc;
  bool ta, tb, out_bf16, bias, act;
  int act_fn;
  float beta;
  bool packed = false;  // B is a prepared weight (blocked layout), not a plain matrix
  auto tie() const { return std::tie(M, N, K, lda, ldb, ldc, ta, tb, out_bf16, bias, act, act_fn, beta, packed); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The cached primitive for `k` on this thread, with its memory descriptors. For a packed
// key, b is the layout the primitive wants for its weights (format_tag::any).
struct Prim {
  dnnl::matmul mm;
  dnnl::memory::desc a, b, c, bias;
};

// Weights prepared by prepare_weight_bf16: W [N, K] reordered once into the blocked layout
// oneDNN's AMX matmul picks for weights of that shape (format_tag::any). A GEMM on a plain
// [N, K] weight makes oneDNN pack it on every call; on ViT-B-32's shapes the prepared layout
// is ~10% faster per GEMM (docs/BENCHMARKS.md). oneDNN picks the same layout whatever M,
// bias, epilogue or output type; each packed primitive still checks (gemm_native) and reads
// the plain W when its layout differs.
struct PackedWeight {
  int64_t N = 0, K = 0;
  dnnl::memory mem;  // owns the blocked copy
};
std::mutex g_packed_mu;
std::map<const bf16*, PackedWeight>& packed_weights() {
  static auto* m = new std::map<const bf16*, PackedWeight>;  // leaked: outlives static dnnl objects
  return *m;
}

// The prepared copy of B for this GEMM, or an empty memory.
dnnl::memory find_packed(bool tb, int64_t N, int64_t K, int64_t ldb, const bf16* B) {
  if (!tb || ldb != K) return {};
  std::lock_guard<std::mutex> lock(g_packed_mu);
  auto it = packed_weights().find(B);
  if (it == packed_weights().end() || it->second.N != N || it->second.K != K) return {};
  return it->second.mem;
}

Prim& primitive(const Key& k) {
  thread_local std::map<Key, Prim> cache;
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  using dt = dnnl::memory::data_type;
  using md = dnnl::memory::desc;
  // Logical src [M,K], weights [K,N], dst [M,N]; a transposed operand is read with swapped strides.
  Prim p;
  p.a = md({k.M, k.K}, dt::bf16, k.ta ? dnnl::memory::dims{1, k.lda} : dnnl::memory::dims{k.lda, 1});
  p.b = k.packed ? md({k.K, k.N}, dt::bf16, dnnl::memory::format_tag::any)
                 : md({k.K, k.N}, dt::bf16, k.tb ? dnnl::memory::dims{1, k.ldb} : dnnl::memory::dims{k.ldb, 1});
  p.c = md({k.M, k.N}, k.out_bf16 ? dt::bf16 : dt::f32, dnnl::memory::dims{k.ldc, 1});
  if (k.bias) p.bias = md({1, k.N}, dt::f32, dnnl::memory::dims{k.N, 1});
  dnnl::primitive_attr attr;
  dnnl::post_ops po;
  if (k.beta != 0.0f) po.append_sum(k.beta);
  if (k.act) append_act_post_op(po, Act(k.act_fn));
  attr.set_post_ops(po);
  dnnl::matmul::primitive_desc pd = k.bias ? dnnl::matmul::primitive_desc(engine(), p.a, p.b, p.bias, p.c, attr)
                                           : dnnl::matmul::primitive_desc(engine(), p.a, p.b, p.c, attr);
  if (k.packed) p.b = pd.weights_desc();
  p.mm = dnnl::matmul(pd);
  return cache.emplace(k, std::move(p)).first->second;
}

void gemm_native(Key k, const bf16* A, const bf16* B, void* C, const float* bias) {
  thread_local dnnl::stream stream(engine());
  dnnl::memory bm;
  if (dnnl::memory packed = find_packed(k.tb, k.N, k.K, k.ldb, B)) {
    k.packed = true;
    if (primitive(k).b == packed.get_desc()) bm = packed;
    else k.packed = false;  // this primitive wants another layout: read the plain W
  }
  Prim& p = primitive(k);
  if (!bm) bm = dnnl::memory(p.b, engine(), const_cast<bf16*>(B));
  dnnl::memory am(p.a, engine(), const_cast<bf16*>(A)), cm(p.c, engine(), C);
  if (k.bias) {
    dnnl::memory biasm(p.bias, engine(), const_cast<float*>(bias));
    p.mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_BIAS, biasm}, {DNNL_ARG_DST, cm}});
  } else {
    p.mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  }
  stream.wait();
}

Key make_key(bool ta, bool tb, int64_t M, int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc, bool out_bf16,
             const Epilogue& e) {
  return Key{M, N, K, lda, ldb, ldc, ta, tb, out_bf16, e.bias != nullptr, e.act, int(e.act_fn), e.beta};
}

// K == 0: the product is zero, C = epilogue(0 + beta * C).
template <typename OutT>
void empty_product(int64_t M, int64_t N, OutT* C, int64_t ldc, const Epilogue& e) {
  float* row = thread_scratch<float>(Scratch::GemmC, size_t(N));
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      float c = 0.0f;
      if constexpr (std::is_same_v<OutT, float>) c = e.beta == 0.0f ? 0.0f : e.beta * C[i * ldc + j];
      row[j] = c + (e.bias ? e.bias[j] : 0.0f);
    }
    if (e.act) act_forward<float>(row, row, N, e.act_fn);
    if constexpr (std::is_same_v<OutT, float>) std::copy(row, row + N, C + i * ldc);
    else to_bf16_row(C + i * ldc, row, N);
  }
}

}  // namespace

void set_bf16_gemm_fallback(bool on) { g_force_fallback = on; }
void set_bf16_gemm_native(bool on) { g_force_native = on; }
bool bf16_native_selected() { return use_native(); }

int64_t prepared_weight_count() {
  std::lock_guard<std::mutex> lock(g_packed_mu);
  return int64_t(packed_weights().size());
}

}  // namespace cpu

void prepare_weight_bf16(const bf16* W, int64_t N, int64_t K) {
  OC_CHECK(W && N > 0 && K > 0, "prepare_weight_bf16: bad weight (N={} K={})", N, K);
  if (!cpu::use_native()) return;
  using dt = dnnl::memory::data_type;
  using md = dnnl::memory::desc;
  // The layout a matmul on this weight shape wants (any M: 256 rows is representative).
  const md a({256, K}, dt::bf16, dnnl::memory::format_tag::ab), c({256, N}, dt::f32, dnnl::memory::format_tag::ab);
  const md any({K, N}, dt::bf16, dnnl::memory::format_tag::any), plain({K, N}, dt::bf16, dnnl::memory::format_tag::ba);
  const md want = dnnl::matmul::primitive_desc(cpu::engine(), a, any, c).weights_desc();
  std::lock_guard<std::mutex> lock(cpu::g_packed_mu);
  auto& reg = cpu::packed_weights();
  if (want == plain) {  // nothing to gain
    reg.erase(W);
    return;
  }
  cpu::PackedWeight& pw = reg[W];
  if (!pw.mem || pw.N != N || pw.K != K || pw.mem.get_desc() != want) pw = {N, K, dnnl::memory(want, cpu::engine())};
  dnnl::memory src(plain, cpu::engine(), const_cast<bf16*>(W));
  dnnl::stream stream(cpu::engine());
  dnnl::reorder(src, pw.mem).execute(stream, src, pw.mem);
  stream.wait();
}

void release_weight_bf16(const bf16* W) {
  std::lock_guard<std::mutex> lock(cpu::g_packed_mu);
  cpu::packed_weights().erase(W);
}

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
               int64_t ldb, float* C, int64_t ldc, const Epilogue& e) {
  cpu::check_layout(ta, tb, M, N, K, lda, ldb, ldc);
  if (M == 0 || N == 0) return;
  if (K == 0) return cpu::empty_product(M, N, C, ldc, e);
  if (cpu::use_native()) return cpu::gemm_native(cpu::make_key(ta, tb, M, N, K, lda, ldb, ldc, false, e), A, B, C, e.bias);
  cpu::gemm_widened(ta, tb, M, N, K, A, lda, B, ldb, C, ldc, e);
}

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda, const bf16* B,
               int64_t ldb, bf16* C, int64_t ldc, const Epilogue& e) {
  cpu::check_layout(ta, tb, M, N, K, lda, ldb, ldc);
  OC_CHECK(e.beta == 0.0f, "gemm_bf16 with a bf16 output cannot accumulate (beta={})", e.beta);
  if (M == 0 || N == 0) return;
  if (K == 0) return cpu::empty_product(M, N, C, ldc, e);
  if (cpu::use_native()) return cpu::gemm_native(cpu::make_key(ta, tb, M, N, K, lda, ldb, ldc, true, e), A, B, C, e.bias);
  // fp32 results in blocks of rows (A transposed: the whole of C at once), then stored as bf16.
  const int64_t block = ta ? M : std::min(M, cpu::kWidenBlock);
  float* c = cpu::thread_scratch<float>(cpu::Scratch::GemmC, size_t(block * N));
  for (int64_t i0 = 0; i0 < M; i0 += block) {
    const int64_t m = std::min(block, M - i0);
    cpu::gemm_widened(ta, tb, m, N, K, ta ? A + i0 : A + i0 * lda, lda, B, ldb, c, N, e);
    cpu::rows_loop(m, N, [&](int64_t i) { cpu::to_bf16_row(C + (i0 + i) * ldc, c + i * N, N); });
  }
}

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const GemmBf16Args& a) { ops::gemm_bf16(a.ta, a.tb, a.M, a.N, a.K, a.A, a.lda, a.B, a.ldb, a.C, a.ldc, a.e); }
void run(const GemmBf16ToBf16Args& a) {
  ops::gemm_bf16(a.ta, a.tb, a.M, a.N, a.K, a.A, a.lda, a.B, a.ldb, a.C, a.ldc, a.e);
}
}  // namespace oc::ops::cpu
