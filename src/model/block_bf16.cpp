#include "model/block_bf16.h"

#include "core/profile.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/gemm_bf16.h"
#include "ops/bf16_ops.h"
#include "ops/layernorm.h"

namespace oc {

void block_forward_bf16(const BlockParams& P, const BlockWeights16& W16, const BlockActs& a, float* y,
                        StackMemory& mem, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W, F = d.F;
  bf16* ln = mem.s16_a();
  bf16* g = mem.s16_big();
  // Not kept in training (StackMemory::plan): the softmax probabilities and the residual xm
  // live in scratch that backward reuses, and block_backward_bf16 recomputes them.
  float* att = a.att ? a.att : mem.d_att();
  float* xm = a.xm ? a.xm : mem.ln_buf();
  { OC_PROFILE("layernorm"); d.be->run(ops::LayerNormForwardBf16Args{
      .out = ln, .mean = a.mean1, .rstd = a.rstd1, .inp = a.x, .weight = P.ln1_w, .bias = P.ln1_b, .N = N, .C = W,
      .eps = d.eps}); }
  {
    OC_PROFILE("linear");  // qkv = ln_1 @ in_w^T + in_b, stored in bf16 (q, k, v only feed GEMMs)
    ops::Epilogue e;
    e.bias = P.in_b;
    d.be->run(ops::GemmBf16ToBf16Args{.ta = false, .tb = true, .M = N, .N = 3 * W, .K = W, .A = ln, .lda = W,
                                      .B = W16.in_w, .ldb = W, .C = a.qkv16, .ldc = 3 * W, .e = e});
  }
  { OC_PROFILE("attention"); d.be->run(ops::AttentionForwardBf16Args{
      .out = a.ao16, .att = att, .qkv = a.qkv16, .B = d.B, .Tn = d.T, .C = W, .H = d.H, .causal = d.causal}); }
  {
    OC_PROFILE("linear");
    ops::Epilogue e;
    e.bias = P.out_b;
    d.be->run(ops::GemmBf16Args{.ta = false, .tb = true, .M = N, .N = W, .K = W, .A = a.ao16, .lda = W, .B = W16.out_w,
                                .ldb = W, .C = xm, .ldc = W, .e = e});
  }
  if (P.ls1) d.be->run(ops::LayerScaleForwardArgs{.x = xm, .gamma = P.ls1, .N = N, .C = W});  // LayerScale ls_1
  {
    OC_PROFILE("residual+layernorm");  // xm = x + attn; ln_2(xm)
    d.be->run(ops::AddLayerNormForwardBf16Args{.xm = xm, .out = ln, .mean = a.mean2, .rstd = a.rstd2, .x = a.x,
                                               .weight = P.ln2_w, .bias = P.ln2_b, .N = N, .C = W, .eps = d.eps});
  }
  {
    // Bias and GELU in the GEMM epilogue, bf16 out, in training too: nothing keeps h (backward
    // recomputes h = c_fc(ln_2) in fp32 and act(h) from it with our fp32 GELU). oneDNN's GELU
    // may differ from ours in the last fp32 bits, so on rare elements backward's act(h) is one
    // bf16 rounding step from the forward's: within the bf16 error the contract accepts.
    OC_PROFILE("linear+gelu");
    ops::Epilogue fc;
    fc.bias = P.fc_b, fc.act = true, fc.act_fn = d.act;
    d.be->run(ops::GemmBf16ToBf16Args{.ta = false, .tb = true, .M = N, .N = F, .K = W, .A = ln, .lda = W, .B = W16.fc_w,
                                      .ldb = W, .C = g, .ldc = F, .e = fc});
  }
  {
    OC_PROFILE("linear");
    ops::Epilogue e;
    e.bias = P.proj_b;
    d.be->run(ops::GemmBf16Args{.ta = false, .tb = true, .M = N, .N = W, .K = F, .A = g, .lda = F, .B = W16.proj_w,
                                .ldb = F, .C = y, .ldc = W, .e = e});
  }
  if (P.ls2) d.be->run(ops::LayerScaleForwardArgs{.x = y, .gamma = P.ls2, .N = N, .C = W});  // LayerScale ls_2
  { OC_PROFILE("residual_add"); d.be->run(ops::AddInplaceArgs{.y = y, .x = xm, .n = N * W}); }  // y = xm + mlp
}

namespace {
// LayerScale's backward for a branch y = x + gamma * (inp16 @ w16^T + b): recomputes the
// branch output o (the forward's GEMM, same operands) into buf, adds sum(dy * o) to dgamma
// and leaves gamma * dy in buf. Returns the branch's gradient (dy itself without LayerScale).
const float* layer_scale_grad_bf16(ops::Backend& be, const float* gamma, float* dgamma, float* buf, const float* dy,
                                   const bf16* inp16, const bf16* w16, const float* b, int64_t N, int64_t K, int64_t W) {
  if (!gamma) return dy;
  OC_PROFILE("layer_scale_bwd");
  ops::Epilogue e;
  e.bias = b;
  be.run(ops::GemmBf16Args{.ta = false, .tb = true, .M = N, .N = W, .K = K, .A = inp16, .lda = K, .B = w16, .ldb = K,
                           .C = buf, .ldc = W, .e = e});
  be.run(ops::LayerScaleBackwardArgs{.dgamma = dgamma, .o_dx = buf, .dy = dy, .gamma = gamma, .N = N, .C = W});
  return buf;
}

// The MLP half of block_backward_bf16; xm is the block's residual stream after attention.
void mlp_backward_bf16(const BlockParams& P, const BlockWeights16& W16, const BlockParams& G, const BlockActs& a,
                       const float* xm, StackMemory& mem, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W, F = d.F;
  float* dres = mem.d_res();
  float* dbig = mem.d_big();
  float* rec = mem.d_big2();
  float* stat = mem.stat_buf();
  bf16* big16 = mem.s16_big();
  bf16* a16 = mem.s16_a();
  bf16* b16 = mem.s16_b();
  ops::Epilogue acc;
  acc.beta = 1.0f;  // weight gradients accumulate
  bf16* dh16 = mem.s16_big2();
  // MLP: y = xm + c_proj(act(c_fc(ln_2(xm)))).  dres holds dy = dxm (residual path).
  // ln_2 recomputed with the forward's row kernel (bitwise the forward's values); h = c_fc(ln_2)
  // with the forward's GEMM and operands, without the GELU epilogue the forward fused into it.
  { OC_PROFILE("layernorm"); d.be->run(ops::LayerNormForwardBf16Args{
      .out = a16, .mean = stat, .rstd = stat + N, .inp = xm, .weight = P.ln2_w, .bias = P.ln2_b, .N = N, .C = W,
      .eps = d.eps}); }
  const float* h = rec;
  {
    OC_PROFILE("recompute_h");
    ops::Epilogue fc;
    fc.bias = P.fc_b;
    d.be->run(ops::GemmBf16Args{.ta = false, .tb = true, .M = N, .N = F, .K = W, .A = a16, .lda = W, .B = W16.fc_w,
                                .ldb = W, .C = rec, .ldc = F, .e = fc});
  }
  if (P.ls2)
    d.be->run(ops::ActForwardBf16Args{.out = big16, .inp = h, .n = N * F,
                                      .act = d.act});  // act(h) for o (as forward, up to rounding)
  const float* dy2 = layer_scale_grad_bf16(*d.be, P.ls2, G.ls2, mem.ln_buf(), dres, big16, W16.proj_w, P.proj_b, N, F, W);
  { OC_PROFILE("bias_grad"); d.be->run(ops::BiasGradToBf16Args{
      .out = b16, .dbias = G.proj_b, .dout = dy2, .M = N, .N = W}); }  // dy in bf16
  { OC_PROFILE("linear_bwd"); d.be->run(ops::GemmBf16Args{.ta = false, .tb = false, .M = N, .N = F, .K = W, .A = b16,
                                                          .lda = W, .B = W16.proj_w, .ldb = F, .C = dbig,
                                                          .ldc = F}); }  // d act
  {
    OC_PROFILE("gelu_bwd");  // act(h) recomputed in bf16, dh in bf16, fc bias gradient: one pass
    d.be->run(ops::ActValueGradBf16Args{.act16 = big16, .dh16 = dh16, .dbias = G.fc_b, .dact = dbig, .h = h, .M = N,
                                        .N = F, .act = d.act});
  }
  { OC_PROFILE("linear_bwd"); d.be->run(ops::GemmBf16Args{.ta = true, .tb = false, .M = W, .N = F, .K = N, .A = b16,
                                                          .lda = W, .B = big16, .ldb = F, .C = G.proj_w, .ldc = F,
                                                          .e = acc}); }  // dproj_w += dy^T act
  {
    OC_PROFILE("linear_bwd");
    d.be->run(ops::GemmBf16Args{.ta = false, .tb = false, .M = N, .N = W, .K = F, .A = dh16, .lda = F, .B = W16.fc_w,
                                .ldb = W, .C = rec, .ldc = W});  // d ln_2 = dh @ fc_w (h is dead)
    d.be->run(ops::GemmBf16Args{.ta = true, .tb = false, .M = F, .N = W, .K = N, .A = dh16, .lda = F, .B = a16,
                                .ldb = W, .C = G.fc_w, .ldc = W, .e = acc});  // dfc_w += dh^T ln_2
  }
  { OC_PROFILE("layernorm_bwd"); d.be->run(ops::LayerNormBackwardArgs{
      .dinp = dres, .dweight = G.ln2_w, .dbias = G.ln2_b, .dout = rec, .inp = xm, .weight = P.ln2_w, .mean = a.mean2,
      .rstd = a.rstd2, .N = N, .C = W}); }
}

// The attention half of block_backward_bf16.
void attention_backward_block_bf16(const BlockParams& P, const BlockWeights16& W16, const BlockParams& G,
                                   const BlockActs& a, StackMemory& mem, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W;
  float* dres = mem.d_res();
  float* dbig = mem.d_big();
  float* rec = mem.d_big2();
  float* stat = mem.stat_buf();
  bf16* big16 = mem.s16_big();
  bf16* a16 = mem.s16_a();
  bf16* b16 = mem.s16_b();
  ops::Epilogue acc;
  acc.beta = 1.0f;  // weight gradients accumulate
  // Attention: xm = x + out_proj(attn(in_proj(ln_1(x)))).  dres = dxm = dx (residual path).
  const float* dy1 = layer_scale_grad_bf16(*d.be, P.ls1, G.ls1, mem.ln_buf(), dres, a.ao16, W16.out_w, P.out_b, N, W, W);
  { OC_PROFILE("bias_grad"); d.be->run(ops::BiasGradToBf16Args{
      .out = b16, .dbias = G.out_b, .dout = dy1, .M = N, .N = W}); }
  {
    OC_PROFILE("linear_bwd");
    d.be->run(ops::GemmBf16ToBf16Args{.ta = false, .tb = false, .M = N, .N = W, .K = W, .A = b16, .lda = W,
                                      .B = W16.out_w, .ldb = W, .C = a16,
                                      .ldc = W});  // d ao (bf16: only GEMMs read it)
    d.be->run(ops::GemmBf16Args{.ta = true, .tb = false, .M = W, .N = W, .K = N, .A = b16, .lda = W, .B = a.ao16,
                                .ldb = W, .C = G.out_w, .ldc = W, .e = acc});  // dout_w += dxm^T ao
  }
  const float* att = a.att;
  if (!att) {
    // The softmax probabilities recomputed by the forward kernel (bitwise the forward's);
    // its output o goes to b16, free once dout_w is done.
    OC_PROFILE("recompute_attention");
    d.be->run(ops::AttentionForwardBf16Args{.out = b16, .att = mem.d_att(), .qkv = a.qkv16, .B = d.B, .Tn = d.T, .C = W,
                                            .H = d.H, .causal = d.causal});
    att = mem.d_att();
  }
  { OC_PROFILE("attention_bwd"); d.be->run(ops::AttentionBackwardBf16Args{
      .dqkv = dbig, .dout = a16, .qkv = a.qkv16, .att = att, .B = d.B, .Tn = d.T, .C = W, .H = d.H}); }
  { OC_PROFILE("bias_grad"); d.be->run(ops::BiasGradToBf16Args{
      .out = big16, .dbias = G.in_b, .dout = dbig, .M = N, .N = 3 * W}); }  // dqkv in bf16
  { OC_PROFILE("layernorm"); d.be->run(ops::LayerNormForwardBf16Args{
      .out = a16, .mean = stat, .rstd = stat + N, .inp = a.x, .weight = P.ln1_w, .bias = P.ln1_b, .N = N, .C = W,
      .eps = d.eps}); }
  {
    OC_PROFILE("linear_bwd");
    d.be->run(ops::GemmBf16Args{.ta = false, .tb = false, .M = N, .N = W, .K = 3 * W, .A = big16, .lda = 3 * W,
                                .B = W16.in_w, .ldb = W, .C = rec, .ldc = W});  // d ln_1 = dqkv @ in_w
    d.be->run(ops::GemmBf16Args{.ta = true, .tb = false, .M = 3 * W, .N = W, .K = N, .A = big16, .lda = 3 * W, .B = a16,
                                .ldb = W, .C = G.in_w, .ldc = W, .e = acc});  // din_w += dqkv^T ln_1
  }
  { OC_PROFILE("layernorm_bwd"); d.be->run(ops::LayerNormBackwardArgs{
      .dinp = dres, .dweight = G.ln1_w, .dbias = G.ln1_b, .dout = rec, .inp = a.x, .weight = P.ln1_w, .mean = a.mean1,
      .rstd = a.rstd1, .N = N, .C = W}); }
}
}  // namespace

void block_backward_bf16(const BlockParams& P, const BlockWeights16& W16, const BlockParams& G, const BlockActs& a,
                         StackMemory& mem, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W;
  // xm = x + ls_1 * out_proj(ao) recomputed as forward computed it (the same GEMM, LayerScale
  // and addition; x + y == y + x exactly) into the stack output buffer, free during backward.
  float* xm = a.xm;
  if (!xm) {
    OC_PROFILE("recompute_xm");
    xm = mem.out(d.B, d.T);
    ops::Epilogue e;
    e.bias = P.out_b;
    d.be->run(ops::GemmBf16Args{.ta = false, .tb = true, .M = N, .N = W, .K = W, .A = a.ao16, .lda = W, .B = W16.out_w,
                                .ldb = W, .C = xm, .ldc = W, .e = e});
    if (P.ls1) d.be->run(ops::LayerScaleForwardArgs{.x = xm, .gamma = P.ls1, .N = N, .C = W});
    d.be->run(ops::AddInplaceArgs{.y = xm, .x = a.x, .n = N * W});
  }
  mlp_backward_bf16(P, W16, G, a, xm, mem, d);
  attention_backward_block_bf16(P, W16, G, a, mem, d);
}

}  // namespace oc
