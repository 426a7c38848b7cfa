// Why: in fp32 inference a GEMM on a plain [N, K] weight makes dnnl_sgemm pack the weight on
// every call, which at a handful of rows costs more than the product itself: encode_image at
// batch 1 (M = 50 tokens) ran its 48 ViT-B-32 GEMMs at 0.13 TFLOP/s on a 2-core Zen 5, 30% of
// the FMA peak. A oneDNN matmul primitive on weights reordered once (format_tag::any) runs the
// same shapes at 0.35-0.47 TFLOP/s (docs/BENCHMARKS.md, "fp32 inference"). The bf16 path keeps
// its weights the same way (gemm_bf16.cpp). Training never prepares: its weights change every
// step.
#include "ops/cpu/linear_packed.h"

#include <omp.h>

#include <dnnl.hpp>
#include <map>
#include <mutex>
#include <tuple>

#include "core/check.h"

namespace oc::ops {
namespace {

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

struct Packed {
  int64_t N = 0, K = 0;
  dnnl::memory mem;  // owns the blocked copy
};
std::mutex g_mu;
std::map<const float*, Packed>& registry() {
  static auto* m = new std::map<const float*, Packed>;  // leaked: outlives static dnnl objects
  return *m;
}

using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;

// The layout a matmul of M rows wants for a [K, N] weight (format_tag::any), with or without bias.
dnnl::matmul::primitive_desc matmul_pd(int64_t M, int64_t K, int64_t N, bool bias) {
  const md a({M, K}, dt::f32, dnnl::memory::format_tag::ab), c({M, N}, dt::f32, dnnl::memory::format_tag::ab);
  const md w({K, N}, dt::f32, dnnl::memory::format_tag::any);
  if (!bias) return dnnl::matmul::primitive_desc(engine(), a, w, c);
  return dnnl::matmul::primitive_desc(engine(), a, w, md({1, N}, dt::f32, dnnl::memory::format_tag::ab), c);
}

struct Prim {
  dnnl::matmul mm;
  md a, w, c, bias;
};
// One primitive per (M, K, N, bias) and thread (oneDNN primitives are not shared across threads here).
Prim& primitive(int64_t M, int64_t K, int64_t N, bool bias) {
  thread_local std::map<std::tuple<int64_t, int64_t, int64_t, bool>, Prim> cache;
  const auto key = std::make_tuple(M, K, N, bias);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const auto pd = matmul_pd(M, K, N, bias);
  Prim p{dnnl::matmul(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc(), {}};
  if (bias) p.bias = md({1, N}, dt::f32, dnnl::memory::format_tag::ab);
  return cache.emplace(key, std::move(p)).first->second;
}

}  // namespace

void prepare_weight_f32(const float* W, int64_t N, int64_t K) {
  OC_CHECK(W && N > 0 && K > 0, "prepare_weight_f32: bad weight (N={} K={})", N, K);
  // The layout for a representative M: oneDNN picks the same weight layout for any M on these
  // shapes; a primitive whose layout differs reads the plain weight (linear_forward_prepared).
  const md want = matmul_pd(256, K, N, true).weights_desc();
  const md plain({K, N}, dt::f32, dnnl::memory::format_tag::ba);
  std::lock_guard<std::mutex> lock(g_mu);
  if (want == plain) {  // nothing to gain
    registry().erase(W);
    return;
  }
  Packed& p = registry()[W];
  if (!p.mem || p.N != N || p.K != K || p.mem.get_desc() != want) p = {N, K, dnnl::memory(want, engine())};
  dnnl::memory src(plain, engine(), const_cast<float*>(W));
  dnnl::stream stream(engine());
  dnnl::reorder(src, p.mem).execute(stream, src, p.mem);
  stream.wait();
}

void release_weight_f32(const float* W) {
  std::lock_guard<std::mutex> lock(g_mu);
  registry().erase(W);
}

int64_t prepared_weight_f32_count() {
  std::lock_guard<std::mutex> lock(g_mu);
  return int64_t(registry().size());
}

bool linear_forward_prepared(float* out, const float* inp, const float* W, const float* bias, int64_t M, int64_t K,
                             int64_t N) {
  if (M <= 0 || omp_in_parallel()) return false;
  dnnl::memory w;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = registry().find(W);
    if (it == registry().end() || it->second.N != N || it->second.K != K) return false;
    w = it->second.mem;
  }
  Prim& p = primitive(M, K, N, bias != nullptr);
  if (p.w != w.get_desc()) return false;  // this M wants another layout: the plain path
  thread_local dnnl::stream stream(engine());
  dnnl::memory am(p.a, engine(), const_cast<float*>(inp)), cm(p.c, engine(), out);
  if (bias) {
    dnnl::memory bm(p.bias, engine(), const_cast<float*>(bias));
    p.mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, bm}, {DNNL_ARG_DST, cm}});
  } else {
    p.mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, cm}});
  }
  stream.wait();
  return true;
}

}  // namespace oc::ops
