#include "model/block_int8.h"

#include <cstdint>

#include "core/check.h"
#include "core/profile.h"
#include "ops/attention.h"
#include "ops/bf16_ops.h"
#include "ops/gemm_int8.h"

namespace oc {

namespace {
// int8 rows [N, K] and their scales [N] in a bf16 [N, K] buffer the other precisions' blocks
// write bf16 to (2NK bytes hold NK + 4N, 64-byte aligned, for K >= 6).
ops::Int8Out int8_rows(bf16* buf, int64_t N, int64_t K, float scale_in) {
  const int64_t qbytes = (N * K + 63) / 64 * 64;
  OC_CHECK(qbytes + 4 * N <= 2 * N * K, "int8 block: rows [{}, {}] do not fit their buffer", N, K);
  auto* q = reinterpret_cast<int8_t*>(buf);
  return {q, reinterpret_cast<float*>(q + qbytes), scale_in};
}
ops::Int8Rows rows(const ops::Int8Out& o) { return {o.q, o.scale}; }

// ln = LayerNorm(inp [+= residual]) as int8 rows, with the static scale of the GEMM it feeds
// (0: per row).
void layernorm_rows(const StackDims& d, const ops::Int8Out& ln, float* mean, float* rstd, float* inp,
                    const float* residual, const float* w, const float* b) {
  ops::layernorm_int8(*d.be, {.q = ln.q,
                              .scale = ln.scale,
                              .mean = mean,
                              .rstd = rstd,
                              .inp = inp,
                              .residual = residual,
                              .weight = w,
                              .bias = b,
                              .N = d.B * d.T,
                              .C = d.W,
                              .eps = d.eps,
                              .static_scale = ln.scale_in});
}
}  // namespace

// Static scales (Int8Weight::input_scale > 0) move each quantization into the producer:
// LayerNorm writes int8 rows, attention writes out_proj's int8 rows, and c_fc's epilogue
// (bias, GELU) writes c_proj's; without them the GEMMs quantize bf16 inputs per row.
void block_forward_int8(const BlockParams& P, const BlockWeightsInt8& W8, const BlockActs& a, float* y,
                        StackMemory& mem, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W, F = d.F;
  bf16* g = mem.s16_big();
  float* xm = a.xm;
  auto gemm = [&](const char* what, ops::GemmInt8Args g8, const float* bias, bool act) {
    OC_PROFILE(what);
    g8.M = N, g8.ldc = g8.W->N;
    g8.e.bias = bias, g8.e.act = act, g8.e.act_fn = d.act;
    ops::gemm_int8(*d.be, g8);
  };
  const ops::Int8Out ln1 = int8_rows(mem.s16_a(), N, W, W8.in_w->input_scale);
  {
    OC_PROFILE("layernorm_int8");
    layernorm_rows(d, ln1, a.mean1, a.rstd1, a.x, nullptr, P.ln1_w, P.ln1_b);
  }
  const ops::Int8Rows ln1_q = rows(ln1);
  gemm("linear_int8", {.W = W8.in_w, .C16 = a.qkv16, .Aq = &ln1_q}, P.in_b, false);  // qkv in bf16: only GEMMs read it
  if (const float s = W8.out_w->input_scale; s > 0.0f) {
    const ops::Int8Out ao = int8_rows(a.ao16, N, W, s);
    {
      OC_PROFILE("attention_int8");
      ops::attention_int8(
          *d.be, {.out = ao, .att = a.att, .qkv = a.qkv16, .B = d.B, .Tn = d.T, .C = W, .H = d.H, .causal = d.causal});
    }
    const ops::Int8Rows ao_q = rows(ao);
    gemm("linear_int8", {.W = W8.out_w, .C = xm, .Aq = &ao_q}, P.out_b, false);
  } else {
    {
      OC_PROFILE("attention");
      d.be->run(ops::AttentionForwardBf16Args{
          .out = a.ao16, .att = a.att, .qkv = a.qkv16, .B = d.B, .Tn = d.T, .C = W, .H = d.H, .causal = d.causal});
    }
    gemm("linear_int8", {.A = a.ao16, .lda = W, .W = W8.out_w, .C = xm}, P.out_b, false);
  }
  if (P.ls1) d.be->run(ops::LayerScaleForwardArgs{.x = xm, .gamma = P.ls1, .N = N, .C = W});  // LayerScale ls_1
  const ops::Int8Out ln2 = int8_rows(mem.s16_a(), N, W, W8.fc_w->input_scale);
  {
    OC_PROFILE("residual+layernorm_int8");  // xm = x + attn; ln_2(xm)
    layernorm_rows(d, ln2, a.mean2, a.rstd2, xm, a.x, P.ln2_w, P.ln2_b);
  }
  const ops::Int8Rows ln2_q = rows(ln2);
  if (const float s = W8.proj_w->input_scale; s > 0.0f) {
    const ops::Int8Out h = int8_rows(g, N, F, s);
    gemm("linear_int8+gelu", {.W = W8.fc_w, .Aq = &ln2_q, .Cq = &h}, P.fc_b, true);
    const ops::Int8Rows h_q = rows(h);
    gemm("linear_int8", {.W = W8.proj_w, .C = y, .Aq = &h_q}, P.proj_b, false);
  } else {
    gemm("linear_int8+gelu", {.W = W8.fc_w, .C16 = g, .Aq = &ln2_q}, P.fc_b, true);
    gemm("linear_int8", {.A = g, .lda = F, .W = W8.proj_w, .C = y}, P.proj_b, false);
  }
  if (P.ls2) d.be->run(ops::LayerScaleForwardArgs{.x = y, .gamma = P.ls2, .N = N, .C = W});  // LayerScale ls_2
  {
    OC_PROFILE("residual_add");
    d.be->run(ops::AddInplaceArgs{.y = y, .x = xm, .n = N * W});
  }  // y = xm + mlp
}

}  // namespace oc
