// int8 GEMMs on the CPU (contract: ops/gemm_int8.h) through oneDNN 3.2's s8 matmul.
// oneDNN 3.2 takes a per-tensor scale for src and per-output-channel scales for the weights,
// not per-row src scales, so the per-row dynamic scale of A is applied as the first post-op
// (binary multiply by a [M, 1] column), then the bias (binary add of [1, N]) and the GELU:
// dst = act(scale_m * (scale_n * acc) + bias), one pass, fp32 or bf16 out. The matmul is
// described as a batch of one ([1, M, K] x [1, K, N]): in 2-D, oneDNN 3.2 has no fast kernel
// for a [M, 1] binary operand (it picks ref:any, ~100x slower); in 3-D the column is its
// per-channel broadcast and brgemm takes it (measured on avx512_core_vnni, 2026-12-04). The weights are
// reordered once into the layout the matmul picks (format_tag::any, with oneDNN's s8s8
// compensation where the ISA needs it); a primitive that wants another layout reads the plain
// [N, K] copy kept beside it.
#include "ops/cpu/gemm_int8.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "ops/cpu/bf16_convert.h"
#include "ops/cpu/dnnl_act.h"
#include "ops/cpu/layernorm_row.h"
#include "ops/cpu/quantize_static.h"
#include "ops/cpu/scratch.h"

namespace oc::ops::cpu {
namespace {

using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;
using tag = dnnl::memory::format_tag;

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The rows a prepared layout is chosen for (oneDNN picks the same blocked layout for any M on
// the shapes measured; a primitive that differs reads the plain copy).
constexpr int64_t kLayoutRows = 256;

class CpuInt8Weight final : public Int8Weight {
 public:
  std::vector<int8_t> plain;  // [N, K], i.e. a [K, N] matrix in format ba
  std::vector<float> scales;  // [N]
  dnnl::memory packed;        // the same values in the matmul's layout
};

// A GEMM's primitive: keyed by everything its descriptors depend on.
struct Key {
  int64_t M, N, K, lda, ldc;
  bool out_bf16, bias, act;
  int act_fn;
  bool packed;
  bool out_s8 = false;  // s8 out with a per-tensor dst scale (GemmInt8Args::Cq)
  auto tie() const { return std::tie(M, N, K, lda, ldc, out_bf16, bias, act, act_fn, packed, out_s8); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

struct Prim {
  dnnl::matmul mm;
  md w;  // the weights layout it reads
};

dt out_type(const Key& k) { return k.out_s8 ? dt::s8 : k.out_bf16 ? dt::bf16 : dt::f32; }

// The [N, K] row-major weight as the matmul's [1, K, N] operand.
md plain_weights(int64_t N, int64_t K) { return md({1, K, N}, dt::s8, tag::acb); }

dnnl::matmul::primitive_desc make_pd(const Key& k) {
  const md a({1, k.M, k.K}, dt::s8, dnnl::memory::dims{k.M * k.lda, k.lda, 1});
  const md w = k.packed ? md({1, k.K, k.N}, dt::s8, tag::any) : plain_weights(k.N, k.K);
  const md c({1, k.M, k.N}, out_type(k), dnnl::memory::dims{k.M * k.ldc, k.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scales_mask(DNNL_ARG_WEIGHTS, 1 << 2);  // per output channel (N)
  if (k.out_s8) attr.set_scales_mask(DNNL_ARG_DST, 0);  // dst = round(post_ops(...) / scale), saturated
  dnnl::post_ops po;
  po.append_binary(dnnl::algorithm::binary_mul, md({1, k.M, 1}, dt::f32, tag::abc));  // A's row scales
  if (k.bias) po.append_binary(dnnl::algorithm::binary_add, md({1, 1, k.N}, dt::f32, tag::abc));
  if (k.act) append_act_post_op(po, Act(k.act_fn));
  attr.set_post_ops(po);
  return dnnl::matmul::primitive_desc(engine(), a, w, c, attr);
}

Prim& primitive(const Key& k) {
  thread_local std::map<Key, Prim> cache;
  auto it = cache.find(k);
  if (it != cache.end()) return it->second;
  const dnnl::matmul::primitive_desc pd = make_pd(k);
  return cache.emplace(k, Prim{dnnl::matmul(pd), pd.weights_desc()}).first->second;
}

// |x| as ordered bits: a bf16 or fp32 magnitude orders as its bit pattern (NaN above Inf), in
// fp32's position (a bf16's bits shifted up), so one threshold finds a non-finite row.
inline uint32_t abs_bits(bf16 x) {
  uint16_t u;
  std::memcpy(&u, &x, 2);
  return uint32_t(u & 0x7fffu) << 16;
}
inline uint32_t abs_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u & 0x7fffffffu;
}
inline float to_float(bf16 x) { return to_f32(x); }
inline float to_float(float x) { return x; }

// q[:] = round(a[:] / s), s = max|a| / 127 (1 for a zero row, NaN for a row holding NaN or
// Inf: q is then 0 and the NaN scale makes the whole output row NaN).
template <typename T>
void quantize_row(const T* a, int64_t K, int8_t* q, float* s) {
  uint32_t mx = 0;
#pragma omp simd reduction(max : mx)
  for (int64_t k = 0; k < K; ++k) mx = std::max(mx, abs_bits(a[k]));
  if (mx >= 0x7f800000u || mx == 0) {
    std::fill(q, q + K, int8_t(0));
    *s = mx == 0 ? 1.0f : std::nanf("");
    return;
  }
  float amax;
  std::memcpy(&amax, &mx, 4);
  const float inv = 127.0f / amax;
  *s = amax / 127.0f;
#pragma omp simd
  for (int64_t k = 0; k < K; ++k) q[k] = int8_t(std::nearbyint(std::clamp(to_float(a[k]) * inv, -127.0f, 127.0f)));
}

// Rows of A [M, K] (row stride lda) into q [M, K] and s [M]; threaded when called outside a
// parallel region on enough values.
template <typename T>
void quantize_rows(const T* A, int64_t lda, int64_t M, int64_t K, int8_t* q, float* s) {
  if (!omp_in_parallel() && M * K >= (int64_t(1) << 14)) {
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < M; ++m) quantize_row(A + m * lda, K, q + m * K, s + m);
  } else {
    for (int64_t m = 0; m < M; ++m) quantize_row(A + m * lda, K, q + m * K, s + m);
  }
}

// Rows of A quantized with the static scale s_in: s[m] = s_in, NaN for a row holding NaN or Inf.
template <typename T>
void quantize_rows_static(const T* A, int64_t lda, int64_t M, int64_t K, int8_t* q, float* s, float s_in) {
  const float inv = 1.0f / s_in;
#pragma omp parallel for schedule(static) if (!omp_in_parallel() && M * K >= (int64_t(1) << 14))
  for (int64_t m = 0; m < M; ++m) s[m] = quantize_static(A + m * lda, K, q + m * K, inv) ? s_in : std::nanf("");
}

// A's rows quantized into thread scratch: per row (dynamic) or with W's static input scale.
Int8Rows quantize_input(const GemmInt8Args& a, const CpuInt8Weight& w) {
  const int64_t M = a.M, K = w.K;
  OC_CHECK(a.lda >= K, "gemm_int8 {}: lda={} for K={}", w.name, a.lda, K);
  int8_t* q = thread_scratch<int8_t>(Scratch::GemmA, size_t(M * K));
  float* s = thread_scratch<float>(Scratch::GemmB, size_t(M));
  if (w.input_scale > 0.0f && a.A)
    quantize_rows_static(a.A, a.lda, M, K, q, s, w.input_scale);
  else if (w.input_scale > 0.0f)
    quantize_rows_static(a.A32, a.lda, M, K, q, s, w.input_scale);
  else if (a.A)
    quantize_rows(a.A, a.lda, M, K, q, s);
  else
    quantize_rows(a.A32, a.lda, M, K, q, s);
  return {q, s};
}

}  // namespace

std::unique_ptr<Int8Weight> quantize_weight_int8(const QuantizeWeightInt8Args& a) {
  OC_CHECK(a.W && a.N > 0 && a.K > 0, "quantize_weight_int8: bad weight {} (N={} K={})", a.name, a.N, a.K);
  if (!a.scales.empty() && int64_t(a.scales.size()) != a.N)
    OC_USER_ERROR("int8 scales of {}: {} values for a weight of {} output channels", a.name, a.scales.size(), a.N);
  if (!std::isfinite(a.input_scale) || a.input_scale < 0.0f)
    OC_USER_ERROR("int8 input scale of {} is {} (must be finite and > 0)", a.name, a.input_scale);
  auto w = std::make_unique<CpuInt8Weight>();
  w->N = a.N, w->K = a.K, w->name = a.name, w->input_scale = a.input_scale;
  w->plain.resize(size_t(a.N * a.K));
  w->scales.resize(size_t(a.N));
  for (int64_t n = 0; n < a.N; ++n) {
    const float* r = a.W + n * a.K;
    float amax = 0.0f;
    for (int64_t k = 0; k < a.K; ++k) {
      if (!std::isfinite(r[k])) OC_USER_ERROR("int8: weight {} has a non-finite value at [{}, {}]", a.name, n, k);
      amax = std::max(amax, std::fabs(r[k]));
    }
    float s = amax > 0.0f ? amax / 127.0f : 1.0f;
    if (!a.scales.empty()) {
      s = a.scales[size_t(n)];
      if (!std::isfinite(s) || s <= 0.0f)
        OC_USER_ERROR("int8 scales of {}: channel {} has scale {} (must be finite and > 0)", a.name, n, s);
    }
    w->scales[size_t(n)] = s;
    int8_t* o = w->plain.data() + n * a.K;
    for (int64_t k = 0; k < a.K; ++k) o[k] = int8_t(std::nearbyint(std::clamp(r[k] / s, -127.0f, 127.0f)));
  }
  const md want = make_pd(Key{kLayoutRows, a.N, a.K, a.K, a.N, false, false, false, 0, true}).weights_desc();
  if (want != plain_weights(a.N, a.K)) {
    dnnl::memory src(plain_weights(a.N, a.K), engine(), w->plain.data());
    w->packed = dnnl::memory(want, engine());
    dnnl::stream stream(engine());
    dnnl::reorder(src, w->packed).execute(stream, src, w->packed);
    stream.wait();
  }
  return w;
}

void gemm_int8(const GemmInt8Args& a) {
  OC_CHECK(a.W && int(a.C != nullptr) + int(a.C16 != nullptr) + int(a.Cq != nullptr) == 1,
           "gemm_int8: needs W and one of C, C16, Cq");
  const auto& w = static_cast<const CpuInt8Weight&>(*a.W);
  const int64_t M = a.M, N = w.N, K = w.K;
  OC_CHECK(M >= 0 && a.ldc >= N, "gemm_int8 {}: M={} ldc={} for [{}, {}]", w.name, M, a.ldc, N, K);
  OC_CHECK(a.e.beta == 0.0f, "gemm_int8 cannot accumulate (beta={})", a.e.beta);
  OC_CHECK(int(a.A != nullptr) + int(a.A32 != nullptr) + int(a.Aq != nullptr) == 1,
           "gemm_int8 {}: needs exactly one of A, A32, Aq", w.name);
  OC_CHECK(!a.Cq || (a.Cq->scale_in > 0.0f && a.ldc == N), "gemm_int8 {}: int8 output needs a scale and ldc = N",
           w.name);
  if (M == 0) return;
  const Int8Rows in = a.Aq ? *a.Aq : quantize_input(a, w);
  Key k{M,
        N,
        K,
        K,
        a.ldc,
        a.C16 != nullptr,
        a.e.bias != nullptr,
        a.e.act,
        int(a.e.act_fn),
        bool(w.packed),
        a.Cq != nullptr};
  Prim* p = &primitive(k);
  dnnl::memory wm;
  if (k.packed && p->w == w.packed.get_desc()) {
    wm = w.packed;
  } else {
    k.packed = false;  // this M wants another layout: read the plain copy
    p = &primitive(k);
    wm = dnnl::memory(p->w, engine(), const_cast<int8_t*>(w.plain.data()));
  }
  thread_local dnnl::stream stream(engine());
  void* out = a.Cq ? static_cast<void*>(a.Cq->q) : a.C16 ? static_cast<void*>(a.C16) : static_cast<void*>(a.C);
  const md a_md({1, M, K}, dt::s8, tag::abc);
  const md c_md({1, M, N}, out_type(k), dnnl::memory::dims{M * a.ldc, a.ldc, 1});
  dnnl::memory am(a_md, engine(), const_cast<int8_t*>(in.q)), cm(c_md, engine(), out);
  dnnl::memory wsm(md({N}, dt::f32, tag::a), engine(), const_cast<float*>(w.scales.data()));
  dnnl::memory rsm(md({1, M, 1}, dt::f32, tag::abc), engine(), const_cast<float*>(in.scale));
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, am},
                                             {DNNL_ARG_WEIGHTS, wm},
                                             {DNNL_ARG_DST, cm},
                                             {DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, wsm},
                                             {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, rsm}};
  if (a.e.bias)
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] =
        dnnl::memory(md({1, 1, N}, dt::f32, tag::abc), engine(), const_cast<float*>(a.e.bias));
  if (a.Cq)
    args[DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST] =
        dnnl::memory(md({1}, dt::f32, tag::a), engine(), const_cast<float*>(&a.Cq->scale_in));
  p->mm.execute(stream, args);
  stream.wait();
  // s8 holds no NaN: a row whose input scale was NaN (non-finite input) keeps it for the next GEMM.
  if (a.Cq)
    for (int64_t m = 0; m < M; ++m) a.Cq->scale[m] = std::isnan(in.scale[m]) ? in.scale[m] : a.Cq->scale_in;
}

// Per row: the residual add, layernorm_row (the fp32 LayerNorm every path shares), the bf16
// rounding LayerNormForwardBf16 applies, then quantize_row: the same values as the two passes.
// With a static scale, the fp32 row is quantized with it.
void layernorm_int8(const LayerNormInt8Args& a) {
  OC_CHECK(a.q && a.scale && a.inp && a.N >= 0 && a.C > 0 && a.static_scale >= 0.0f,
           "layernorm_int8: bad arguments (N={} C={} scale={})", a.N, a.C, a.static_scale);
  const float inv = a.static_scale > 0.0f ? 1.0f / a.static_scale : 0.0f;
#pragma omp parallel if (a.N * a.C >= (int64_t(1) << 14))
  {
    float* tmp = thread_scratch<float>(Scratch::GemmC, size_t(a.C));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < a.N; ++i) {
      float* r = a.inp + i * a.C;
      if (a.residual) {
        const float* x = a.residual + i * a.C;
#pragma omp simd
        for (int64_t c = 0; c < a.C; ++c) r[c] += x[c];
      }
      layernorm_row(tmp, a.mean + i, a.rstd + i, r, a.weight, a.bias, a.C, a.eps);
      if (a.static_scale > 0.0f) {  // fp32 values straight to int8 (no bf16 copy to match)
        a.scale[i] = quantize_static(tmp, a.C, a.q + i * a.C, inv) ? a.static_scale : std::nanf("");
        continue;
      }
      round_row(tmp, tmp, a.C);
      quantize_row(tmp, a.C, a.q + i * a.C, a.scale + i);
    }
  }
}

}  // namespace oc::ops::cpu
