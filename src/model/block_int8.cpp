#include "model/block_int8.h"

#include "core/profile.h"
#include "ops/attention.h"
#include "ops/bf16_ops.h"
#include "ops/gemm_int8.h"
#include "ops/layernorm.h"

namespace oc {

void block_forward_int8(const BlockParams& P, const BlockWeightsInt8& W8, const BlockActs& a, float* y,
                        StackMemory& mem, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W, F = d.F;
  bf16* ln = mem.s16_a();
  bf16* g = mem.s16_big();
  float* xm = a.xm;
  auto gemm = [&](const char* what, const bf16* A, int64_t lda, const ops::Int8Weight* w, float* C, bf16* C16,
                  const float* bias, bool act) {
    OC_PROFILE(what);
    ops::Epilogue e;
    e.bias = bias, e.act = act, e.act_fn = d.act;
    ops::gemm_int8(*d.be, {.M = N, .A = A, .lda = lda, .W = w, .C = C, .C16 = C16, .ldc = w->N, .e = e});
  };
  {
    OC_PROFILE("layernorm");
    d.be->run(ops::LayerNormForwardBf16Args{.out = ln,
                                            .mean = a.mean1,
                                            .rstd = a.rstd1,
                                            .inp = a.x,
                                            .weight = P.ln1_w,
                                            .bias = P.ln1_b,
                                            .N = N,
                                            .C = W,
                                            .eps = d.eps});
  }
  gemm("linear_int8", ln, W, W8.in_w, nullptr, a.qkv16, P.in_b, false);  // qkv in bf16: only GEMMs read it
  {
    OC_PROFILE("attention");
    d.be->run(ops::AttentionForwardBf16Args{
        .out = a.ao16, .att = a.att, .qkv = a.qkv16, .B = d.B, .Tn = d.T, .C = W, .H = d.H, .causal = d.causal});
  }
  gemm("linear_int8", a.ao16, W, W8.out_w, xm, nullptr, P.out_b, false);
  if (P.ls1) d.be->run(ops::LayerScaleForwardArgs{.x = xm, .gamma = P.ls1, .N = N, .C = W});  // LayerScale ls_1
  {
    OC_PROFILE("residual+layernorm");  // xm = x + attn; ln_2(xm)
    d.be->run(ops::AddLayerNormForwardBf16Args{.xm = xm,
                                               .out = ln,
                                               .mean = a.mean2,
                                               .rstd = a.rstd2,
                                               .x = a.x,
                                               .weight = P.ln2_w,
                                               .bias = P.ln2_b,
                                               .N = N,
                                               .C = W,
                                               .eps = d.eps});
  }
  gemm("linear_int8+gelu", ln, W, W8.fc_w, nullptr, g, P.fc_b, true);
  gemm("linear_int8", g, F, W8.proj_w, y, nullptr, P.proj_b, false);
  if (P.ls2) d.be->run(ops::LayerScaleForwardArgs{.x = y, .gamma = P.ls2, .N = N, .C = W});  // LayerScale ls_2
  {
    OC_PROFILE("residual_add");
    d.be->run(ops::AddInplaceArgs{.y = y, .x = xm, .n = N * W});
  }  // y = xm + mlp
}

}  // namespace oc
