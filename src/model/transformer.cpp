#include "model/transformer.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/checked.h"
#include "core/profile.h"
#include "model/act_ranges.h"
#include "model/block_bf16.h"
#include "model/block_int8.h"
#include "ops/attention.h"
#include "ops/layernorm.h"
#include "ops/linear.h"

namespace oc {

namespace {
size_t up16(size_t n) { return (n + 15) / 16 * 16; }
}  // namespace

void StackMemory::plan(int64_t B, int64_t T, int64_t W, int64_t H, int64_t F, int64_t layers, bool training,
                       bool checkpoint, bool bf16_acts) {
  B_max_ = B, T_max_ = T, W_ = W, H_ = H, F_ = F, layers_ = layers, training_ = training;
  checkpoint_ = training && checkpoint;
  bf16_acts_ = bf16_acts;
  // One checked bound (core/checked.h) on the sizes below: every buffer is at most M floats
  // (M covers one layer's slot with its padding), and the total is under M * (2 * layers + 8),
  // so when that product fits, none of the unchecked sums and products below can wrap.
  const std::string what = label_ + " activations";
  const int64_t M = checked_add(what, {checked_mul(what, {B, H, T, T}), checked_mul(what, {B, T, std::max(3 * W, F)}),
                                       checked_mul(what, {B, T, F}), checked_mul(what, {8, B, T, W}),
                                       checked_mul(what, {4, B, T}), 256});
  checked_mul(what, {M, checked_add(what, {checked_mul(what, {2, layers}), 8})});
  const size_t bt = size_t(B * T), btw = bt * W;
  const size_t big = bt * size_t(std::max(3 * W, F));
  // Per layer: x, mean1, rstd1, qkv, att, ao, xm, mean2, rstd2, h. Training with bf16
  // activations keeps qkv and ao in bf16 (half) and does not keep att, xm and h: backward
  // recomputes them (block_bf16.cpp): xm = x + out_proj(ao) and att with the forward's own
  // kernels and operands (bitwise the forward's values), h = c_fc(ln_2(xm)) with one more GEMM
  // (the forward never writes h: its GELU is fused into that GEMM). At ViT-B-32, batch 256
  // that is 150 + 37.5 + 29 MiB per layer.
  const bool lean = bf16_acts && training;
  const size_t qkv_ao = bf16_acts ? up16((3 * btw + 1) / 2) + up16((btw + 1) / 2) : up16(3 * btw) + up16(btw);
  // att only in training (fp32): inference computes each (b, h) block of the probabilities in
  // cache (ops/attention.h, att null), so its plans hold no [B,H,T,T] buffer.
  const size_t att_xm_h = lean ? 0 : (training ? up16(size_t(B * H * T * T)) : 0) + up16(btw) + up16(bt * F);
  layer_stride_ = up16(btw) + up16(bt) * 4 + qkv_ao + att_xm_h;
  const size_t slots = training && !checkpoint_ ? size_t(layers) : 1;
  // output + forward scratch (LayerNorm output, activated MLP hidden) + backward scratch
  size_t total = layer_stride_ * slots + up16(btw) * 2 + up16(big) + (checkpoint_ ? up16(btw) * size_t(layers) : 0);
  if (training) total += up16(btw) + up16(big) + up16(size_t(B * H * T * T)) + up16(2 * bt);
  const size_t s16 =
      bf16_acts ? up16((big + 1) / 2) + (training ? up16((bt * F + 1) / 2) : 0) + 2 * up16((btw + 1) / 2) : 0;
  total += s16;
  buf_.bind(*be_, label_ + fmt::format(" activations ({} tokens, width {}, {} layers{})", T, W, layers,
                                        training ? ", training" : ""));
  buf_.resize(total, /*zero=*/false);
  float* p = buf_.data();
  layers_base_ = p;
  p += layer_stride_ * slots;
  if (checkpoint_) xs_ = p, p += up16(btw) * size_t(layers);
  out_ = p, p += up16(btw);
  ln_buf_ = p, p += up16(btw);
  d_big2_ = p, p += up16(big);
  if (training) {
    d_res_ = p, p += up16(btw);
    d_big_ = p, p += up16(big);
    d_att_ = p, p += up16(size_t(B * H * T * T));
    stat_buf_ = p, p += up16(2 * bt);
  }
  s16_big_ = s16_big2_ = s16_a_ = s16_b_ = nullptr;
  if (bf16_acts) {
    s16_big_ = reinterpret_cast<bf16*>(p), p += up16((big + 1) / 2);
    if (training) s16_big2_ = reinterpret_cast<bf16*>(p), p += up16((bt * F + 1) / 2);
    s16_a_ = reinterpret_cast<bf16*>(p), p += up16((btw + 1) / 2);
    s16_b_ = reinterpret_cast<bf16*>(p), p += up16((btw + 1) / 2);
  }
}

BlockActs StackMemory::layer(int64_t l, int64_t B, int64_t T) {
  OC_CHECK(fits(B, T), "activations planned for B<={} T<={}, asked B={} T={}", B_max_, T_max_, B, T);
  // Inference: every layer shares slot 0, but the block input x must not be overwritten
  // while the block runs, so x alternates between slot 0's x and the output buffer.
  float* base = layers_base_ + (training_ && !checkpoint_ ? size_t(l) * layer_stride_ : 0);
  const size_t bt = size_t(B_max_ * T_max_), btw = bt * W_;
  BlockActs a;
  float* p = base;
  a.x = p, p += up16(btw);
  a.mean1 = p, p += up16(bt);
  a.rstd1 = p, p += up16(bt);
  a.qkv = a.ao = a.att = a.xm = a.h = nullptr;
  a.qkv16 = a.ao16 = nullptr;
  const bool lean = bf16_acts_ && training_;  // att, xm, h recomputed in backward (plan())
  if (bf16_acts_) {
    a.qkv16 = reinterpret_cast<bf16*>(p), p += up16((3 * btw + 1) / 2);
  } else {
    a.qkv = p, p += up16(3 * btw);
  }
  if (!lean && training_) a.att = p, p += up16(size_t(B_max_ * H_ * T_max_ * T_max_));
  if (bf16_acts_) {
    a.ao16 = reinterpret_cast<bf16*>(p), p += up16((btw + 1) / 2);
  } else {
    a.ao = p, p += up16(btw);
  }
  if (!lean) a.xm = p, p += up16(btw);
  a.mean2 = p, p += up16(bt);
  a.rstd2 = p, p += up16(bt);
  if (!lean) a.h = p, p += up16(bt * F_);
  if (!training_ && (l % 2 == 1)) a.x = out_;
  if (checkpoint_) a.x = xs_ + size_t(l) * up16(btw);
  return a;
}

float* StackMemory::out(int64_t B, int64_t T) {
  // Inference ping-pong: layer l writes layer l+1's x, which is out_ for odd l+1 and slot
  // 0's x for even l+1; the last write goes to "layer L's x".
  if (!training_ && layers_ % 2 == 0) return layer(0, B, T).x;
  return out_;
}

namespace {
// One block's forward: saves what backward needs in `a`, writes the output to y. ln and g
// are scratch for the LayerNorm output and the activated MLP hidden state.
void block_forward(const BlockParams& P, const BlockActs& a, float* y, float* ln, float* g, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W, F = d.F;
  { OC_PROFILE("layernorm"); d.be->run(ops::LayerNormForwardArgs{
      .out = ln, .mean = a.mean1, .rstd = a.rstd1, .inp = a.x, .weight = P.ln1_w, .bias = P.ln1_b, .N = N, .C = W,
      .eps = d.eps}); }
  observe_gemm_input(P.in_w, ln, N * W);  // calibration only (model/act_ranges.h)
  { OC_PROFILE("linear"); d.be->run(ops::LinearForwardArgs{.out = a.qkv, .inp = ln, .weight = P.in_w, .bias = P.in_b,
                                                           .M = N, .K = W, .N = 3 * W, .prec = d.prec}); }
  { OC_PROFILE("attention"); d.be->run(ops::AttentionForwardArgs{
      .out = a.ao, .att = a.att, .qkv = a.qkv, .B = d.B, .Tn = d.T, .C = W, .H = d.H, .causal = d.causal,
      .prec = d.prec}); }
  observe_gemm_input(P.out_w, a.ao, N * W);
  { OC_PROFILE("linear"); d.be->run(ops::LinearForwardArgs{.out = a.xm, .inp = a.ao, .weight = P.out_w, .bias = P.out_b,
                                                           .M = N, .K = W, .N = W, .prec = d.prec}); }
  if (P.ls1) d.be->run(ops::LayerScaleForwardArgs{.x = a.xm, .gamma = P.ls1, .N = N, .C = W});  // LayerScale ls_1
  { OC_PROFILE("residual_add"); d.be->run(ops::AddInplaceArgs{.y = a.xm, .x = a.x, .n = N * W}); }  // xm = x + attn
  { OC_PROFILE("layernorm"); d.be->run(ops::LayerNormForwardArgs{
      .out = ln, .mean = a.mean2, .rstd = a.rstd2, .inp = a.xm, .weight = P.ln2_w, .bias = P.ln2_b, .N = N, .C = W,
      .eps = d.eps}); }
  observe_gemm_input(P.fc_w, ln, N * W);
  { OC_PROFILE("linear"); d.be->run(ops::LinearForwardArgs{.out = a.h, .inp = ln, .weight = P.fc_w, .bias = P.fc_b,
                                                           .M = N, .K = W, .N = F, .prec = d.prec}); }
  { OC_PROFILE("gelu"); d.be->run(ops::ActForwardArgs{.out = g, .inp = a.h, .n = N * F, .act = d.act}); }
  observe_gemm_input(P.proj_w, g, N * F);
  { OC_PROFILE("linear"); d.be->run(ops::LinearForwardArgs{.out = y, .inp = g, .weight = P.proj_w, .bias = P.proj_b,
                                                           .M = N, .K = F, .N = W, .prec = d.prec}); }
  if (P.ls2) d.be->run(ops::LayerScaleForwardArgs{.x = y, .gamma = P.ls2, .N = N, .C = W});  // LayerScale ls_2
  { OC_PROFILE("residual_add"); d.be->run(ops::AddInplaceArgs{.y = y, .x = a.xm, .n = N * W}); }  // y = xm + mlp
}
}  // namespace

namespace {
// LayerScale's backward for a branch y = x + gamma * (inp @ w^T + b): recomputes the branch
// output o into buf (it is not kept), adds sum(dy * o) to dgamma and leaves gamma * dy in buf.
// Returns the gradient the branch's linear layer sees (dy itself without LayerScale).
const float* layer_scale_grad(ops::Backend& be, const float* gamma, float* dgamma, float* buf, const float* dy,
                              const float* inp, const float* w, const float* b, int64_t N, int64_t K, int64_t W,
                              ops::Prec prec) {
  if (!gamma) return dy;
  OC_PROFILE("layer_scale_bwd");
  be.run(ops::LinearForwardArgs{.out = buf, .inp = inp, .weight = w, .bias = b, .M = N, .K = K, .N = W, .prec = prec});
  be.run(ops::LayerScaleBackwardArgs{.dgamma = dgamma, .o_dx = buf, .dy = dy, .gamma = gamma, .N = N, .C = W});
  return buf;
}

bool bf16_blocks(const StackMemory& mem, const StackDims& d) {
  if (!d.w16) return false;
  OC_CHECK(mem.bf16_acts() && d.prec == ops::Prec::BF16 && int64_t(d.w16->size()) == d.layers,
           "bf16 blocks need memory planned with bf16 activations and {} bf16 weight sets", d.layers);
  return true;
}
}  // namespace

void stack_forward(const std::vector<BlockParams>& p, StackMemory& mem, const StackDims& d) {
  const bool b16 = bf16_blocks(mem, d);
  if (d.w8)
    OC_CHECK(mem.bf16_acts() && !mem.training() && int64_t(d.w8->size()) == d.layers,
             "int8 blocks need inference memory planned with bf16 activations and {} int8 weight sets", d.layers);
  for (int64_t l = 0; l < d.layers; ++l) {
    float* y = (l + 1 < d.layers) ? mem.layer(l + 1, d.B, d.T).x : mem.out(d.B, d.T);
    if (d.w8)
      block_forward_int8(p[l], (*d.w8)[size_t(l)], mem.layer(l, d.B, d.T), y, mem, d);
    else if (b16)
      block_forward_bf16(p[l], (*d.w16)[size_t(l)], mem.layer(l, d.B, d.T), y, mem, d);
    else block_forward(p[l], mem.layer(l, d.B, d.T), y, mem.ln_buf(), mem.d_big2(), d);
  }
}

void stack_backward(const std::vector<BlockParams>& p, const std::vector<BlockParams>& g, StackMemory& mem,
                    const float* d_out, const StackDims& d) {
  const int64_t N = d.B * d.T, W = d.W, F = d.F;
  float* dres = mem.d_res();
  float* dbig = mem.d_big();
  float* rec = mem.d_big2();
  float* ln = mem.ln_buf();
  float* stat = mem.stat_buf();
  const bool b16 = bf16_blocks(mem, d);
  d.be->copy(dres, d_out, sizeof(float) * size_t(N * W));
  for (int64_t l = d.layers - 1; l >= 0; --l) {
    const BlockParams& P = p[l];
    const BlockParams& G = g[l];
    BlockActs a = mem.layer(l, d.B, d.T);
    if (mem.checkpointing() && l + 1 < d.layers) {
      // Recompute this block's activations into the shared slot (the last block's are still
      // there from forward). The stack output buffer is free by now: use it for y.
      OC_PROFILE("recompute");
      if (b16) block_forward_bf16(P, (*d.w16)[size_t(l)], a, mem.out(d.B, d.T), mem, d);
      else block_forward(P, a, mem.out(d.B, d.T), ln, rec, d);
    }
    if (b16) {
      block_backward_bf16(P, (*d.w16)[size_t(l)], G, a, mem, d);
      if (mem.on_block_backward) mem.on_block_backward(l);
      continue;
    }
    // MLP: y = xm + c_proj(act(c_fc(ln_2(xm)))).  dres holds dy = dxm (residual path).
    { OC_PROFILE("gelu"); d.be->run(ops::ActForwardArgs{.out = rec, .inp = a.h, .n = N * F,
                                                        .act = d.act}); }  // recompute act(h)
    const float* dy2 = layer_scale_grad(*d.be, P.ls2, G.ls2, ln, dres, rec, P.proj_w, P.proj_b, N, F, W, d.prec);
    { OC_PROFILE("linear_bwd"); d.be->run(ops::LinearBackwardArgs{
        .dinp = dbig, .dweight = G.proj_w, .dbias = G.proj_b, .dout = dy2, .inp = rec, .weight = P.proj_w, .M = N,
        .K = F, .N = W, .prec = d.prec}); }  // dbig = d act
    { OC_PROFILE("gelu_bwd"); d.be->run(ops::ActBackwardArgs{
        .dinp = dbig, .dout = dbig, .inp = a.h, .n = N * F, .act = d.act}); }  // dbig = dh
    { OC_PROFILE("layernorm"); d.be->run(ops::LayerNormForwardArgs{
        .out = ln, .mean = stat, .rstd = stat + N, .inp = a.xm, .weight = P.ln2_w, .bias = P.ln2_b, .N = N, .C = W,
        .eps = d.eps}); }  // recompute ln_2
    { OC_PROFILE("linear_bwd"); d.be->run(ops::LinearBackwardArgs{
        .dinp = rec, .dweight = G.fc_w, .dbias = G.fc_b, .dout = dbig, .inp = ln, .weight = P.fc_w, .M = N, .K = W,
        .N = F, .prec = d.prec}); }  // rec = d ln_2
    { OC_PROFILE("layernorm_bwd"); d.be->run(ops::LayerNormBackwardArgs{
        .dinp = dres, .dweight = G.ln2_w, .dbias = G.ln2_b, .dout = rec, .inp = a.xm, .weight = P.ln2_w,
        .mean = a.mean2, .rstd = a.rstd2, .N = N, .C = W}); }
    // Attention: xm = x + out_proj(attn(in_proj(ln_1(x)))).  dres = dxm = dx (residual path).
    const float* dy1 = layer_scale_grad(*d.be, P.ls1, G.ls1, ln, dres, a.ao, P.out_w, P.out_b, N, W, W, d.prec);
    { OC_PROFILE("linear_bwd"); d.be->run(ops::LinearBackwardArgs{
        .dinp = rec, .dweight = G.out_w, .dbias = G.out_b, .dout = dy1, .inp = a.ao, .weight = P.out_w, .M = N, .K = W,
        .N = W, .prec = d.prec}); }  // rec = d ao
    { OC_PROFILE("attention_bwd"); d.be->run(ops::AttentionBackwardArgs{
        .dqkv = dbig, .scratch = mem.d_att(), .dout = rec, .qkv = a.qkv, .att = a.att, .B = d.B, .Tn = d.T, .C = W,
        .H = d.H, .causal = d.causal, .prec = d.prec}); }
    { OC_PROFILE("layernorm"); d.be->run(ops::LayerNormForwardArgs{
        .out = ln, .mean = stat, .rstd = stat + N, .inp = a.x, .weight = P.ln1_w, .bias = P.ln1_b, .N = N, .C = W,
        .eps = d.eps}); }  // recompute ln_1
    { OC_PROFILE("linear_bwd"); d.be->run(ops::LinearBackwardArgs{
        .dinp = rec, .dweight = G.in_w, .dbias = G.in_b, .dout = dbig, .inp = ln, .weight = P.in_w, .M = N, .K = W,
        .N = 3 * W, .prec = d.prec}); }  // rec = d ln_1
    { OC_PROFILE("layernorm_bwd"); d.be->run(ops::LayerNormBackwardArgs{
        .dinp = dres, .dweight = G.ln1_w, .dbias = G.ln1_b, .dout = rec, .inp = a.x, .weight = P.ln1_w, .mean = a.mean1,
        .rstd = a.rstd1, .N = N, .C = W}); }
    if (mem.on_block_backward) mem.on_block_backward(l);
  }
}

}  // namespace oc
