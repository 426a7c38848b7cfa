#include "model/block_int8.h"

#include <cstdint>

#include "core/check.h"
#include "core/profile.h"
#include "ops/attention.h"
#include "ops/bf16_ops.h"
#include "ops/gemm_int8.h"

namespace oc {

namespace {
// The LayerNorm outputs as int8 rows [N, W] and their scales [N], in the bf16 [N, W] buffer the
// other precisions' blocks write them to (2NW bytes hold NW + 4N, 64-byte aligned, for W >= 6).
struct LnRows {
  int8_t* q;
  float* scale;
  ops::Int8Rows rows() const { return {q, scale}; }
};
LnRows ln_rows(bf16* buf, int64_t N, int64_t W) {
  const int64_t qbytes = (N * W + 63) / 64 * 64;
  OC_CHECK(qbytes + 4 * N <= 2 * N * W, "int8 block: LayerNorm rows [{}, {}] do not fit their buffer", N, W);
  auto* q = reinterpret_cast<int8_t*>(buf);
  return {q, reinterpret_cast<float*>(q + qbytes)};
}
}  // namespace

void block_forward_int8(const BlockParams& P, const BlockWeightsInt8& W8, const BlockActs& a, float* y,
                        StackMemory& mem, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W, F = d.F;
  const LnRows ln = ln_rows(mem.s16_a(), N, W);
  const ops::Int8Rows ln_q = ln.rows();
  bf16* g = mem.s16_big();
  float* xm = a.xm;
  auto gemm = [&](const char* what, ops::GemmInt8Args g8, const float* bias, bool act) {
    OC_PROFILE(what);
    g8.M = N, g8.ldc = g8.W->N;
    g8.e.bias = bias, g8.e.act = act, g8.e.act_fn = d.act;
    ops::gemm_int8(*d.be, g8);
  };
  {
    OC_PROFILE("layernorm_int8");
    ops::layernorm_int8(*d.be, {.q = ln.q,
                                .scale = ln.scale,
                                .mean = a.mean1,
                                .rstd = a.rstd1,
                                .inp = a.x,
                                .weight = P.ln1_w,
                                .bias = P.ln1_b,
                                .N = N,
                                .C = W,
                                .eps = d.eps});
  }
  gemm("linear_int8", {.W = W8.in_w, .C16 = a.qkv16, .Aq = &ln_q}, P.in_b, false);  // qkv in bf16: only GEMMs read it
  {
    OC_PROFILE("attention");
    d.be->run(ops::AttentionForwardBf16Args{
        .out = a.ao16, .att = a.att, .qkv = a.qkv16, .B = d.B, .Tn = d.T, .C = W, .H = d.H, .causal = d.causal});
  }
  gemm("linear_int8", {.A = a.ao16, .lda = W, .W = W8.out_w, .C = xm}, P.out_b, false);
  if (P.ls1) d.be->run(ops::LayerScaleForwardArgs{.x = xm, .gamma = P.ls1, .N = N, .C = W});  // LayerScale ls_1
  {
    OC_PROFILE("residual+layernorm_int8");  // xm = x + attn; ln_2(xm)
    ops::layernorm_int8(*d.be, {.q = ln.q,
                                .scale = ln.scale,
                                .mean = a.mean2,
                                .rstd = a.rstd2,
                                .inp = xm,
                                .residual = a.x,
                                .weight = P.ln2_w,
                                .bias = P.ln2_b,
                                .N = N,
                                .C = W,
                                .eps = d.eps});
  }
  gemm("linear_int8+gelu", {.W = W8.fc_w, .C16 = g, .Aq = &ln_q}, P.fc_b, true);
  gemm("linear_int8", {.A = g, .lda = F, .W = W8.proj_w, .C = y}, P.proj_b, false);
  if (P.ls2) d.be->run(ops::LayerScaleForwardArgs{.x = y, .gamma = P.ls2, .N = N, .C = W});  // LayerScale ls_2
  {
    OC_PROFILE("residual_add");
    d.be->run(ops::AddInplaceArgs{.y = y, .x = xm, .n = N * W});
  }  // y = xm + mlp
}

}  // namespace oc
