#include "model/block_bf16.h"

#include "core/profile.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/bf16_gemm.h"
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
  { OC_PROFILE("layernorm"); d.be->layernorm_forward_bf16(ln, a.mean1, a.rstd1, a.x, P.ln1_w, P.ln1_b, N, W, d.eps); }
  {
    OC_PROFILE("linear");  // qkv = ln_1 @ in_w^T + in_b, stored in bf16 (q, k, v only feed GEMMs)
    ops::Epilogue e;
    e.bias = P.in_b;
    d.be->gemm_bf16(false, true, N, 3 * W, W, ln, W, W16.in_w, W, a.qkv16, 3 * W, e);
  }
  { OC_PROFILE("attention"); d.be->attention_forward_bf16(a.ao16, att, a.qkv16, d.B, d.T, W, d.H, d.causal); }
  {
    OC_PROFILE("linear");
    ops::Epilogue e;
    e.bias = P.out_b;
    d.be->gemm_bf16(false, true, N, W, W, a.ao16, W, W16.out_w, W, xm, W, e);
  }
  if (P.ls1) d.be->layer_scale_forward(xm, P.ls1, N, W);  // LayerScale ls_1
  {
    OC_PROFILE("residual+layernorm");  // xm = x + attn; ln_2(xm)
    d.be->add_layernorm_forward_bf16(xm, ln, a.mean2, a.rstd2, a.x, P.ln2_w, P.ln2_b, N, W, d.eps);
  }
  {
    // Bias and GELU in the GEMM epilogue, bf16 out, in training too: nothing keeps h (backward
    // recomputes h = c_fc(ln_2) in fp32 and act(h) from it with our fp32 GELU). oneDNN's GELU
    // may differ from ours in the last fp32 bits, so on rare elements backward's act(h) is one
    // bf16 rounding step from the forward's: within the bf16 error the contract accepts.
    OC_PROFILE("linear+gelu");
    ops::Epilogue fc;
    fc.bias = P.fc_b, fc.act = true, fc.act_fn = d.act;
    d.be->gemm_bf16(false, true, N, F, W, ln, W, W16.fc_w, W, g, F, fc);
  }
  {
    OC_PROFILE("linear");
    ops::Epilogue e;
    e.bias = P.proj_b;
    d.be->gemm_bf16(false, true, N, W, F, g, F, W16.proj_w, F, y, W, e);
  }
  if (P.ls2) d.be->layer_scale_forward(y, P.ls2, N, W);  // LayerScale ls_2
  { OC_PROFILE("residual_add"); d.be->add_inplace(y, xm, N * W); }  // y = xm + mlp
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
  be.gemm_bf16(false, true, N, W, K, inp16, K, w16, K, buf, W, e);
  be.layer_scale_backward(dgamma, buf, dy, gamma, N, W);
  return buf;
}
}  // namespace

void block_backward_bf16(const BlockParams& P, const BlockWeights16& W16, const BlockParams& G, const BlockActs& a,
                         StackMemory& mem, const StackDims& d) {
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
  // xm = x + ls_1 * out_proj(ao) recomputed as forward computed it (the same GEMM, LayerScale
  // and addition; x + y == y + x exactly) into the stack output buffer, free during backward.
  float* xm = a.xm;
  if (!xm) {
    OC_PROFILE("recompute_xm");
    xm = mem.out(d.B, d.T);
    ops::Epilogue e;
    e.bias = P.out_b;
    d.be->gemm_bf16(false, true, N, W, W, a.ao16, W, W16.out_w, W, xm, W, e);
    if (P.ls1) d.be->layer_scale_forward(xm, P.ls1, N, W);
    d.be->add_inplace(xm, a.x, N * W);
  }
  // MLP: y = xm + c_proj(act(c_fc(ln_2(xm)))).  dres holds dy = dxm (residual path).
  // ln_2 recomputed with the forward's row kernel (bitwise the forward's values); h = c_fc(ln_2)
  // with the forward's GEMM and operands, without the GELU epilogue the forward fused into it.
  { OC_PROFILE("layernorm"); d.be->layernorm_forward_bf16(a16, stat, stat + N, xm, P.ln2_w, P.ln2_b, N, W, d.eps); }
  const float* h = rec;
  {
    OC_PROFILE("recompute_h");
    ops::Epilogue fc;
    fc.bias = P.fc_b;
    d.be->gemm_bf16(false, true, N, F, W, a16, W, W16.fc_w, W, rec, F, fc);
  }
  if (P.ls2) d.be->act_forward_bf16(big16, h, N * F, d.act);  // act(h) for o (as forward, up to rounding)
  const float* dy2 = layer_scale_grad_bf16(*d.be, P.ls2, G.ls2, mem.ln_buf(), dres, big16, W16.proj_w, P.proj_b, N, F, W);
  { OC_PROFILE("bias_grad"); d.be->bias_grad_to_bf16(b16, G.proj_b, dy2, N, W); }  // dy in bf16
  { OC_PROFILE("linear_bwd"); d.be->gemm_bf16(false, false, N, F, W, b16, W, W16.proj_w, F, dbig, F); }  // d act
  {
    OC_PROFILE("gelu_bwd");  // act(h) recomputed in bf16, dh in bf16, fc bias gradient: one pass
    d.be->act_value_grad_bf16(big16, dh16, G.fc_b, dbig, h, N, F, d.act);
  }
  { OC_PROFILE("linear_bwd"); d.be->gemm_bf16(true, false, W, F, N, b16, W, big16, F, G.proj_w, F, acc); }  // dproj_w += dy^T act
  {
    OC_PROFILE("linear_bwd");
    d.be->gemm_bf16(false, false, N, W, F, dh16, F, W16.fc_w, W, rec, W);           // d ln_2 = dh @ fc_w (h is dead)
    d.be->gemm_bf16(true, false, F, W, N, dh16, F, a16, W, G.fc_w, W, acc);          // dfc_w += dh^T ln_2
  }
  { OC_PROFILE("layernorm_bwd"); d.be->layernorm_backward(dres, G.ln2_w, G.ln2_b, rec, xm, P.ln2_w, a.mean2, a.rstd2, N, W); }
  // Attention: xm = x + out_proj(attn(in_proj(ln_1(x)))).  dres = dxm = dx (residual path).
  const float* dy1 = layer_scale_grad_bf16(*d.be, P.ls1, G.ls1, mem.ln_buf(), dres, a.ao16, W16.out_w, P.out_b, N, W, W);
  { OC_PROFILE("bias_grad"); d.be->bias_grad_to_bf16(b16, G.out_b, dy1, N, W); }
  {
    OC_PROFILE("linear_bwd");
    d.be->gemm_bf16(false, false, N, W, W, b16, W, W16.out_w, W, a16, W);            // d ao (bf16: only GEMMs read it)
    d.be->gemm_bf16(true, false, W, W, N, b16, W, a.ao16, W, G.out_w, W, acc);       // dout_w += dxm^T ao
  }
  const float* att = a.att;
  if (!att) {
    // The softmax probabilities recomputed by the forward kernel (bitwise the forward's);
    // its output o goes to b16, free once dout_w is done.
    OC_PROFILE("recompute_attention");
    d.be->attention_forward_bf16(b16, mem.d_att(), a.qkv16, d.B, d.T, W, d.H, d.causal);
    att = mem.d_att();
  }
  { OC_PROFILE("attention_bwd"); d.be->attention_backward_bf16(dbig, a16, a.qkv16, att, d.B, d.T, W, d.H); }
  { OC_PROFILE("bias_grad"); d.be->bias_grad_to_bf16(big16, G.in_b, dbig, N, 3 * W); }  // dqkv in bf16
  { OC_PROFILE("layernorm"); d.be->layernorm_forward_bf16(a16, stat, stat + N, a.x, P.ln1_w, P.ln1_b, N, W, d.eps); }
  {
    OC_PROFILE("linear_bwd");
    d.be->gemm_bf16(false, false, N, W, 3 * W, big16, 3 * W, W16.in_w, W, rec, W);  // d ln_1 = dqkv @ in_w
    d.be->gemm_bf16(true, false, 3 * W, W, N, big16, 3 * W, a16, W, G.in_w, W, acc);  // din_w += dqkv^T ln_1
  }
  { OC_PROFILE("layernorm_bwd"); d.be->layernorm_backward(dres, G.ln1_w, G.ln1_b, rec, a.x, P.ln1_w, a.mean1, a.rstd1, N, W); }
}

}  // namespace oc
