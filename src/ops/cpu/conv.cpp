// 2-D convolution on the CPU. float: oneDNN convolution primitives on channels-last (nhwc)
// activations, the weights in the layout the primitive asks for (format `any`: oneDNN's
// blocked layout), reordered from / to PyTorch's OIHW on each call (weights are small next
// to the activations); one primitive per (shape, direction) per thread, as the matmuls of
// gemm.cpp. The weight gradient is accumulated by the reorder's sum post-op.
// Prec::BF16 (amp_bf16): bf16 operands (src, weights, diff_dst), fp32 accumulation and fp32
// outputs. Where the bf16 GEMMs run natively (cpu::bf16_native_selected: AVX512-BF16 on AMD,
// AMX) oneDNN's bf16 primitives run on the operands converted to bf16 (the activations by
// to_bf16_row, the weights by the reorder into the primitive's layout); elsewhere, and for a
// shape oneDNN has only a reference kernel for in bf16, the operands are rounded to bf16
// values in scratch and the fp32 primitive runs. The products of bf16 values are exact in
// fp32, so both are the same math up to the order of the fp32 sums.
// The forward's epilogue (bias, residual, ReLU: ModifiedResNet's inference path) runs as the
// primitive's bias argument and its sum post-op, the ReLU as a pass after it (see below). Weights handed to
// prepare_conv_weight (inference: fixed until released) are reordered once per layout the
// primitives ask for (and, where bf16 is rounded rather than native, rounded once) and kept.
// double: plain loops (the gradient checks' reference).
#include "ops/cpu/conv.h"

#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>

#include "core/bf16.h"
#include "core/check.h"
#include "ops/conv_index.h"
#include "ops/cpu/bf16_convert.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/linear.h"
#include "ops/cpu/pool.h"
#include "ops/cpu/scratch.h"

namespace oc::ops {
namespace {

enum class Dir { Fwd, BwdData, BwdWeights };

void check_shape(const ConvShape& s, const char* op) {
  OC_CHECK(s.N > 0 && s.H > 0 && s.W > 0 && s.C > 0 && s.OC > 0 && s.K > 0 && s.stride > 0 && s.pad >= 0,
           "{}: bad shape N={} H={} W={} C={} OC={} K={} stride={} pad={}", op, s.N, s.H, s.W, s.C, s.OC, s.K, s.stride,
           s.pad);
  OC_CHECK(s.OH() > 0 && s.OW() > 0, "{}: kernel {} (pad {}) larger than the input {}x{}", op, s.K, s.pad, s.H, s.W);
}

// ---- double: the definition, loop by loop ----
// f(n, oh, ow, h, w, i, j) for every output position and every kernel tap that lands inside.
template <class F>
void each_tap(const ConvShape& s, F f) {
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH(); ++oh)
      for (int64_t ow = 0; ow < s.OW(); ++ow)
        for (int64_t i = 0; i < s.K; ++i)
          for (int64_t j = 0; j < s.K; ++j) {
            const int64_t h = oh * s.stride - s.pad + i, w = ow * s.stride - s.pad + j;
            if (h >= 0 && h < s.H && w >= 0 && w < s.W) f(n, oh, ow, h, w, i, j);
          }
}

double in(double v, Prec p) { return p == Prec::BF16 ? double(round_bf16(float(v))) : v; }

void forward_f64(double* out, const double* inp, const double* wt, const ConvShape& s, Prec p) {
  const ConvIndex ix{s};
  std::fill(out, out + s.N * s.OH() * s.OW() * s.OC, 0.0);
  each_tap(s, [&](int64_t n, int64_t oh, int64_t ow, int64_t h, int64_t w, int64_t i, int64_t j) {
    for (int64_t o = 0; o < s.OC; ++o)
      for (int64_t c = 0; c < s.C; ++c)
        out[ix.y(n, oh, ow, o)] += in(inp[ix.x(n, h, w, c)], p) * in(wt[ix.w(o, c, i, j)], p);
  });
}

void backward_data_f64(double* dinp, const double* dout, const double* wt, const ConvShape& s, Prec p) {
  const ConvIndex ix{s};
  std::fill(dinp, dinp + s.N * s.H * s.W * s.C, 0.0);
  each_tap(s, [&](int64_t n, int64_t oh, int64_t ow, int64_t h, int64_t w, int64_t i, int64_t j) {
    for (int64_t o = 0; o < s.OC; ++o)
      for (int64_t c = 0; c < s.C; ++c)
        dinp[ix.x(n, h, w, c)] += in(dout[ix.y(n, oh, ow, o)], p) * in(wt[ix.w(o, c, i, j)], p);
  });
}

void backward_weights_f64(double* dwt, const double* dout, const double* inp, const ConvShape& s, Prec p) {
  const ConvIndex ix{s};
  each_tap(s, [&](int64_t n, int64_t oh, int64_t ow, int64_t h, int64_t w, int64_t i, int64_t j) {
    for (int64_t o = 0; o < s.OC; ++o)
      for (int64_t c = 0; c < s.C; ++c)
        dwt[ix.w(o, c, i, j)] += in(dout[ix.y(n, oh, ow, o)], p) * in(inp[ix.x(n, h, w, c)], p);
  });
}

// ---- float: oneDNN ----
using md = dnnl::memory::desc;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// The forward's epilogue in the primitive: the bias argument, the sum post-op (the residual,
// in dst before the primitive runs).
struct ConvEpi {
  bool bias = false, sum = false;
  auto tie() const { return std::tie(bias, sum); }
};

struct Key {
  int64_t N, H, W, C, OC, K, S, P;
  Dir dir;
  bool bf16;  // bf16 operands (src, weights, diff_dst), fp32 outputs
  ConvEpi epi;  // Fwd only
  auto tie() const { return std::tuple_cat(std::tie(N, H, W, C, OC, K, S, P, dir, bf16), epi.tie()); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

// A primitive and the weights layout it works in; `wei_reorder` converts OIHW to that layout
// (forward, backward data: absent when it is OIHW already) or adds that layout's gradient
// into OIHW (backward weights: always, with the sum post-op). `usable` is false for a bf16 plan
// oneDNN has no bf16 kernel for, or only its reference one (the caller then rounds instead).
struct Plan {
  dnnl::primitive conv;
  md act_in, act_out, wei, user_wei;
  std::optional<dnnl::reorder> wei_reorder;
  bool usable = true;
};

// Whether oneDNN picked an optimised implementation ("ref:any" is a plain loop nest).
template <class PD>
bool optimised(const PD& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) != 0;
}

Plan make_plan(const Key& k) {
  const ConvShape s{k.N, k.H, k.W, k.C, k.OC, k.K, k.S, k.P};
  // Operands in bf16 on the bf16 path; the output of each direction (dst, diff_src, diff_weights) in f32.
  const dt op = k.bf16 ? dt::bf16 : dt::f32;
  const dt src_t = k.dir == Dir::BwdData ? dt::f32 : op, dst_t = k.dir == Dir::Fwd ? dt::f32 : op;
  const dt wei_t = k.dir == Dir::BwdWeights ? dt::f32 : op;
  const md src({s.N, s.C, s.H, s.W}, src_t, tag::nhwc), dst({s.N, s.OC, s.OH(), s.OW()}, dst_t, tag::nhwc);
  const md wei_any({s.OC, s.C, s.K, s.K}, wei_t, tag::any), user({s.OC, s.C, s.K, s.K}, dt::f32, tag::oihw);
  const dnnl::memory::dims st{s.stride, s.stride}, pad{s.pad, s.pad};
  const auto alg = dnnl::algorithm::convolution_direct;
  // The forward hint of the backward directions: the operands' types throughout.
  const md hint_src({s.N, s.C, s.H, s.W}, op, tag::nhwc), hint_dst({s.N, s.OC, s.OH(), s.OW()}, op, tag::nhwc);
  const md hint_wei({s.OC, s.C, s.K, s.K}, op, tag::any);
  dnnl::primitive_attr epi;
  if (k.epi.sum) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    epi.set_post_ops(po);
  }
  const md bias_md({s.OC}, dt::f32, tag::x);
  dnnl::convolution_forward::primitive_desc fwd =
      k.dir != Dir::Fwd ? dnnl::convolution_forward::primitive_desc(engine(), dnnl::prop_kind::forward_training, alg,
                                                                    hint_src, hint_wei, hint_dst, st, pad, pad)
      : k.epi.bias      ? dnnl::convolution_forward::primitive_desc(engine(), dnnl::prop_kind::forward_inference, alg,
                                                                    src, wei_any, bias_md, dst, st, pad, pad, epi)
                        : dnnl::convolution_forward::primitive_desc(engine(), dnnl::prop_kind::forward_training, alg,
                                                                    src, wei_any, dst, st, pad, pad, epi);
  Plan p{.act_in = src, .act_out = dst, .user_wei = user};
  if (k.dir == Dir::Fwd) {
    p.conv = dnnl::convolution_forward(fwd), p.wei = fwd.weights_desc(), p.usable = optimised(fwd);
  } else if (k.dir == Dir::BwdData) {
    dnnl::convolution_backward_data::primitive_desc bd(engine(), alg, src, wei_any, dst, st, pad, pad, fwd);
    p.conv = dnnl::convolution_backward_data(bd), p.wei = bd.weights_desc(), p.usable = optimised(bd);
  } else {
    dnnl::convolution_backward_weights::primitive_desc bw(engine(), alg, src, wei_any, dst, st, pad, pad, fwd);
    p.conv = dnnl::convolution_backward_weights(bw), p.wei = bw.diff_weights_desc(), p.usable = optimised(bw);
    dnnl::post_ops po;
    po.append_sum(1.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    p.wei_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), p.wei, engine(), user, attr));
    return p;
  }
  if (p.wei != user) p.wei_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), user, engine(), p.wei));
  return p;
}

// A bf16 plan oneDNN cannot build (no bf16 kernel for the shape on this CPU) is kept as unusable.
Plan plan_or_unusable(const Key& k) {
  if (!k.bf16) return make_plan(k);
  try {
    return make_plan(k);
  } catch (const dnnl::error&) {
    return Plan{.usable = false};
  }
}

Plan& plan(const ConvShape& s, Dir dir, bool bf16, ConvEpi epi = {}) {
  thread_local std::map<Key, Plan> cache;
  const Key k{s.N, s.H, s.W, s.C, s.OC, s.K, s.stride, s.pad, dir, bf16, epi};
  auto it = cache.find(k);
  if (it == cache.end()) it = cache.emplace(k, plan_or_unusable(k)).first;
  return it->second;
}

// Runs f(i0, i1) over [0, n) in chunks, threaded when large (outside a parallel region).
template <class F>
void chunks(size_t n, F f) {
  constexpr size_t kChunk = size_t(1) << 14;
  const int64_t count = int64_t((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static) if (count > 1 && !omp_in_parallel())
  for (int64_t i = 0; i < count; ++i) f(size_t(i) * kChunk, std::min(n, size_t(i + 1) * kChunk));
}

// The operand as the fp32 primitive reads it: itself (F32), or its bf16 values in scratch (BF16).
const float* operand(const float* x, size_t n, Prec prec, cpu::Scratch slot) {
  if (prec != Prec::BF16) return x;
  float* r = cpu::thread_scratch<float>(slot, n);
  chunks(n, [&](size_t i0, size_t i1) { cpu::round_row(r + i0, x + i0, int64_t(i1 - i0)); });
  return r;
}

// The operand converted to bf16 in scratch, for the bf16 primitives.
bf16* operand_bf16(const float* x, size_t n, cpu::Scratch slot) {
  bf16* r = cpu::thread_scratch<bf16>(slot, n);
  chunks(n, [&](size_t i0, size_t i1) { cpu::to_bf16_row(r + i0, x + i0, int64_t(i1 - i0)); });
  return r;
}

// Whether Prec::BF16 runs oneDNN's bf16 primitives for this shape and direction.
bool native(const ConvShape& s, Dir dir, Prec prec, ConvEpi epi = {}) {
  return prec == Prec::BF16 && cpu::bf16_native_selected() && plan(s, dir, true, epi).usable;
}

// ---- prepared weights (Backend::prepare_conv_weight) ----
// Per weight: its copies in the layouts (memory descs) the forward primitives asked for, and
// whether the copy holds bf16-rounded values (the fp32 primitive on rounded operands); a list,
// so a copy handed out stays at its address until the weight is released.
struct Copy {
  md layout;
  bool rounded;
  dnnl::memory mem;  // owns its buffer
};
std::mutex g_prepared_mu;
std::map<const float*, std::list<Copy>>& prepared() {
  static auto* m = new std::map<const float*, std::list<Copy>>;  // leaked: outlives static dnnl objects
  return *m;
}

bool is_prepared(const float* w) {
  std::lock_guard<std::mutex> lock(g_prepared_mu);
  return prepared().count(w) > 0;
}

// The copy of prepared weight `w` in `layout` (rounded: bf16 values), or null when absent.
const dnnl::memory* find_copy(const float* w, const md& layout, bool rounded) {
  std::lock_guard<std::mutex> lock(g_prepared_mu);
  auto it = prepared().find(w);
  if (it == prepared().end()) return nullptr;
  for (const Copy& c : it->second)
    if (c.rounded == rounded && c.layout == layout) return &c.mem;
  return nullptr;
}

template <class T>
T* ptr(const T* p) {
  return const_cast<T*>(p);  // oneDNN memory wraps non-const handles
}

dnnl::stream& stream() {
  thread_local dnnl::stream st(engine());
  return st;
}

size_t in_size(const ConvShape& s) { return size_t(s.N * s.H * s.W * s.C); }
size_t out_size(const ConvShape& s) { return size_t(s.N * s.OH() * s.OW() * s.OC); }
size_t wt_size(const ConvShape& s) { return size_t(s.OC * s.C * s.K * s.K); }

// The forward: activations a_in (src; bf16: bf16 values), a_out (dst, fp32; holding the
// residual where epi.sum), the user's OIHW fp32 `weight`, bias[OC] where epi.bias. `rounded`:
// the fp32 primitive on bf16-rounded weights (Prec::BF16 without the bf16 primitives). `key`:
// the prepared weight this is (or null): its kept copy runs, made on the first call in this
// layout; otherwise the weight is rounded and reordered into scratch on every call.
void run_forward(const ConvShape& s, void* a_in, float* a_out, const float* weight, const float* bias, bool bf16,
                 ConvEpi epi, const float* key, bool rounded) {
  Plan& p = plan(s, Dir::Fwd, bf16, epi);
  const dnnl::engine& e = engine();
  const bool keep = key && (p.wei_reorder || rounded);
  const dnnl::memory* kept = keep ? find_copy(key, p.wei, rounded) : nullptr;
  dnnl::memory w;
  if (kept) {
    w = *kept;
  } else {
    const float* wt = rounded ? operand(weight, wt_size(s), Prec::BF16, cpu::Scratch::GemmB) : weight;
    dnnl::memory user(p.user_wei, e, ptr(wt));
    if (!p.wei_reorder && !keep) {
      w = user;
    } else {  // kept: in memory of its own; else in scratch
      w = keep ? dnnl::memory(p.wei, e)
               : dnnl::memory(p.wei, e, cpu::thread_scratch<float>(cpu::Scratch::GemmC, p.wei.get_size() / 4 + 1));
      if (p.wei_reorder) p.wei_reorder->execute(stream(), user, w);
      else std::memcpy(w.get_data_handle(), wt, p.wei.get_size());  // the rounded values, as they are
    }
    if (keep) {  // the first run in this layout: the registry keeps the copy
      stream().wait();
      std::lock_guard<std::mutex> lock(g_prepared_mu);
      auto it = prepared().find(key);
      OC_CHECK(it != prepared().end(), "conv2d_forward: prepared weight {} released while in use", (const void*)key);
      it->second.push_back(Copy{p.wei, rounded, w});
    }
  }
  dnnl::memory in(p.act_in, e, a_in), out(p.act_out, e, a_out);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, out}};
  if (epi.bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(md({s.OC}, dt::f32, tag::x), e, ptr(bias)));
  p.conv.execute(stream(), args);
  stream().wait();
}

// Runs a backward direction with activations a_in (diff_src or src), a_out (diff_dst) and the
// user's OIHW weights (or weight gradient) `wt`; with bf16, the operands among the activations
// are bf16 (diff_dst of both, src of BwdWeights).
void run_dnnl(Dir dir, const ConvShape& s, void* a_in, void* a_out, float* wt, bool bf16) {
  Plan& p = plan(s, dir, bf16);
  const dnnl::engine& e = engine();
  dnnl::stream& st = stream();
  dnnl::memory in(p.act_in, e, a_in), out(p.act_out, e, a_out), user(p.user_wei, e, wt);
  dnnl::memory w = user;
  if (p.wei_reorder)
    w = dnnl::memory(p.wei, e, cpu::thread_scratch<float>(cpu::Scratch::GemmC, p.wei.get_size() / 4 + 1));
  if (dir == Dir::BwdData) {
    if (p.wei_reorder) p.wei_reorder->execute(st, user, w);
    p.conv.execute(st, {{DNNL_ARG_DIFF_SRC, in}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_DST, out}});
  } else {
    p.conv.execute(st, {{DNNL_ARG_SRC, in}, {DNNL_ARG_DIFF_WEIGHTS, w}, {DNNL_ARG_DIFF_DST, out}});
    p.wei_reorder->execute(st, w, user);  // user += w (sum post-op)
  }
  st.wait();
}

}  // namespace

template <typename T>
void conv2d_forward(T* out, const T* inp, const T* weight, const ConvShape& s, Prec prec, const T* bias,
                    const T* residual, bool relu) {
  check_shape(s, "conv2d_forward");
  if constexpr (std::is_same_v<T, double>) {
    forward_f64(out, inp, weight, s, prec);
    const int64_t rows = s.N * s.OH() * s.OW();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < s.OC; ++o) {
        double& y = out[r * s.OC + o];
        if (bias) y += bias[o];
        if (residual) y += residual[r * s.OC + o];
        if (relu && y < 0.0) y = 0.0;
      }
  } else {
    // The ReLU runs as a pass after the primitive, not as its eltwise post-op: oneDNN's
    // relu(alpha = 0) is a vmaxps that turns NaN into 0, where PyTorch (and ref) keep NaN.
    const ConvEpi epi{.bias = bias != nullptr, .sum = residual != nullptr};
    if (residual && residual != out)  // the sum post-op adds what dst holds
      chunks(out_size(s), [&](size_t i0, size_t i1) { std::memcpy(out + i0, residual + i0, (i1 - i0) * sizeof(T)); });
    const float* key = is_prepared(weight) ? weight : nullptr;
    if (native(s, Dir::Fwd, prec, epi))
      run_forward(s, operand_bf16(inp, in_size(s), cpu::Scratch::GemmA), out, weight, bias, true, epi, key, false);
    else
      run_forward(s, ptr(operand(inp, in_size(s), prec, cpu::Scratch::GemmA)), out, weight, bias, false, epi, key,
                  prec == Prec::BF16);
    if (relu) relu_forward(out, out, int64_t(out_size(s)));
  }
}

template <typename T>
void conv2d_backward_data(T* dinp, const T* dout, const T* weight, const ConvShape& s, Prec prec) {
  check_shape(s, "conv2d_backward_data");
  if constexpr (std::is_same_v<T, double>) {
    backward_data_f64(dinp, dout, weight, s, prec);
  } else if (native(s, Dir::BwdData, prec)) {
    run_dnnl(Dir::BwdData, s, dinp, operand_bf16(dout, out_size(s), cpu::Scratch::GemmA), ptr(weight), true);
  } else {
    const float* dy = operand(dout, out_size(s), prec, cpu::Scratch::GemmA);
    const float* w = operand(weight, wt_size(s), prec, cpu::Scratch::GemmB);
    run_dnnl(Dir::BwdData, s, dinp, ptr(dy), ptr(w), false);
  }
}

template <typename T>
void conv2d_backward_weights(T* dweight, const T* dout, const T* inp, const ConvShape& s, Prec prec) {
  check_shape(s, "conv2d_backward_weights");
  if constexpr (std::is_same_v<T, double>) {
    backward_weights_f64(dweight, dout, inp, s, prec);
  } else if (native(s, Dir::BwdWeights, prec)) {
    bf16* dy = operand_bf16(dout, out_size(s), cpu::Scratch::GemmA);
    run_dnnl(Dir::BwdWeights, s, operand_bf16(inp, in_size(s), cpu::Scratch::GemmB), dy, dweight, true);
  } else {
    const float* dy = operand(dout, out_size(s), prec, cpu::Scratch::GemmA);
    const float* x = operand(inp, in_size(s), prec, cpu::Scratch::GemmB);
    run_dnnl(Dir::BwdWeights, s, ptr(x), ptr(dy), dweight, false);
  }
}

#define OC_INSTANTIATE(T)                                                                \
  template void conv2d_forward<T>(T*, const T*, const T*, const ConvShape&, Prec, const T*, const T*, bool); \
  template void conv2d_backward_data<T>(T*, const T*, const T*, const ConvShape&, Prec); \
  template void conv2d_backward_weights<T>(T*, const T*, const T*, const ConvShape&, Prec);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

void prepare_conv_weight(const float* W, int64_t size) {
  OC_CHECK(W && size > 0, "prepare_conv_weight: bad weight (size {})", size);
  std::lock_guard<std::mutex> lock(g_prepared_mu);
  prepared()[W].clear();  // copies of what W held before are stale
}

void release_conv_weight(const float* W) {
  std::lock_guard<std::mutex> lock(g_prepared_mu);
  prepared().erase(W);
}

size_t prepared_conv_copies(const float* W) {
  std::lock_guard<std::mutex> lock(g_prepared_mu);
  auto it = prepared().find(W);
  return it == prepared().end() ? 0 : it->second.size();
}

}  // namespace oc::ops

// The cpu backend's entry points (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const Conv2dForwardArgs& a) {
  ops::conv2d_forward(a.out, a.inp, a.weight, a.shape, a.prec, a.bias, a.residual, a.relu);
}
void run(const Conv2dBackwardDataArgs& a) {
  ops::conv2d_backward_data(a.dinp, a.dout, a.weight, a.shape, a.prec);
}
void run(const Conv2dBackwardWeightsArgs& a) {
  ops::conv2d_backward_weights(a.dweight, a.dout, a.inp, a.shape, a.prec);
  if (a.dbias)  // the column sums of dout (linear.h: dinp and dweight null are skipped)
    ops::linear_backward<float>(nullptr, nullptr, a.dbias, a.dout, nullptr, nullptr,
                                a.shape.N * a.shape.OH() * a.shape.OW(), 0, a.shape.OC);
}
}  // namespace oc::ops::cpu
