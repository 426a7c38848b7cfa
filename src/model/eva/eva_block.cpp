#include "model/eva/eva_block.h"

#include <algorithm>

#include "core/check.h"
#include "model/tower_util.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/rope.h"
#include "ops/swiglu.h"

namespace oc {
namespace {

// C[:, 0:W) (row stride ldc) = A[M, K] @ Wt[W, K]^T  (a projection into one part of qkv).
ops::GemmArgs proj_into(float* C, int64_t ldc, const float* A, const float* Wt, int64_t M, int64_t K, int64_t W,
                        ops::Prec prec) {
  return {false, true, M, W, K, 1.0f, A, K, Wt, K, 0.0f, C, ldc, prec};
}
// C[M, N] (row stride ldc) += ones[M] x bias[N]: the bias as a rank-1 GEMM.
ops::GemmArgs add_bias(float* C, int64_t ldc, const float* ones, const float* bias, int64_t M, int64_t N) {
  return {false, false, M, N, 1, 1.0f, ones, 1, bias, N, 1.0f, C, ldc, ops::Prec::F32};
}
// dbias[N] += ones[M]^T @ dC[M, N] (row stride ldc): the bias gradient, a column sum in a GEMM.
ops::GemmArgs bias_grad(float* dbias, const float* ones, const float* dC, int64_t ldc, int64_t M, int64_t N) {
  return {false, false, 1, N, M, 1.0f, ones, M, dC, ldc, 1.0f, dbias, N, ops::Prec::F32};
}

}  // namespace

void EvaStack::plan(ops::Backend& be, const std::string& label, int64_t B_max, const EvaDims& d, bool training,
                    bool checkpoint) {
  be_ = &be, d_ = d, B_max_ = B_max, training_ = training, checkpoint_ = training && checkpoint;
  const size_t N = size_t(B_max * d.T), W = size_t(d.W), F = size_t(d.F), att = size_t(B_max * d.H * d.T * d.T);
  auto pad = [](size_t n) { return (n + 15) / 16 * 16; };
  act_stride_ = 4 * pad(2 * N) + pad(3 * N * W) + pad(att) + 2 * pad(N * W) + 2 * pad(N * F);
  const size_t slots = training && !checkpoint_ ? size_t(d.L) : 1, xslots = training ? size_t(d.L + 1) : 2;
  arena_.bind(be, label + " (EVA02 blocks)");
  BufferPlan bp;
  bp.add(&xs_, xslots * N * W).add(&acts_, slots * act_stride_).add(&ones_, N).add(&ln_, N * std::max(W, F));
  bp.add(&h_, N * F);
  if (training) {
    bp.add(&d_w_, N * W).add(&d_w2_, N * W).add(&d_big_, N * std::max(3 * W, F)).add(&d_f_, N * F);
    bp.add(&d_att_, att).add(&stat_, 2 * N);
  }
  bp.allocate(arena_);
  be.fill(ones_, int64_t(N), 1.0f);
}

float* EvaStack::x_slot(int64_t l) const { return xs_ + size_t(training_ ? l : l % 2) * size_t(B_max_ * d_.T * d_.W); }

EvaStack::Acts EvaStack::acts(int64_t l) const {
  const size_t N = size_t(d_.B * d_.T), W = size_t(d_.W), F = size_t(d_.F);
  float* p = acts_ + size_t(training_ && !checkpoint_ ? l : 0) * act_stride_;
  auto take = [&](size_t n) {
    float* r = p;
    p += (n + 15) / 16 * 16;
    return r;
  };
  Acts a{};
  a.x = x_slot(l);
  a.st1 = take(2 * N), a.qkv = take(3 * N * W), a.att = take(size_t(d_.B * d_.H * d_.T * d_.T));
  a.ao = take(N * W), a.sta = take(2 * N), a.xm = take(N * W), a.st2 = take(2 * N);
  a.gate = take(N * F), a.up = take(N * F), a.st3 = take(2 * N);
  return a;
}

void EvaStack::layer_norm(float* out, float* stats, const float* inp, const float* w, const float* b, int64_t C) const {
  const int64_t N = d_.B * d_.T;
  be_->run(ops::LayerNormForwardArgs{
      .out = out, .mean = stats, .rstd = stats + N, .inp = inp, .weight = w, .bias = b, .N = N, .C = C, .eps = d_.eps});
}

void EvaStack::ln_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                           const float* stats, int64_t C) const {
  const int64_t N = d_.B * d_.T;
  be_->run(ops::LayerNormBackwardArgs{.dinp = dinp,
                                      .dweight = dw,
                                      .dbias = db,
                                      .dout = dout,
                                      .inp = inp,
                                      .weight = w,
                                      .mean = stats,
                                      .rstd = stats + N,
                                      .N = N,
                                      .C = C});
}

void EvaStack::block_forward(const EvaBlockParams& p, const Acts& a, float* out, const float* sincos) const {
  const int64_t N = d_.B * d_.T, W = d_.W, F = d_.F;
  const ops::Prec prec = d_.prec;
  layer_norm(ln_, a.st1, a.x, p.ln1_w, p.ln1_b, W);
  be_->run(proj_into(a.qkv, 3 * W, ln_, p.q_w, N, W, W, prec));
  be_->run(proj_into(a.qkv + W, 3 * W, ln_, p.k_w, N, W, W, prec));
  be_->run(proj_into(a.qkv + 2 * W, 3 * W, ln_, p.v_w, N, W, W, prec));
  be_->run(add_bias(a.qkv, 3 * W, ones_, p.q_b, N, W));
  be_->run(add_bias(a.qkv + 2 * W, 3 * W, ones_, p.v_b, N, W));
  be_->run(ops::RopeForwardArgs{.qkv = a.qkv, .sincos = sincos, .B = d_.B, .T = d_.T, .W = W, .H = d_.H, .prefix = 1});
  be_->run(ops::AttentionForwardArgs{.out = a.ao,
                                     .att = a.att,
                                     .qkv = a.qkv,
                                     .B = d_.B,
                                     .Tn = d_.T,
                                     .C = W,
                                     .H = d_.H,
                                     .causal = false,
                                     .prec = prec});
  layer_norm(ln_, a.sta, a.ao, p.an_w, p.an_b, W);
  be_->run(ops::LinearForwardArgs{
      .out = a.xm, .inp = ln_, .weight = p.proj_w, .bias = p.proj_b, .M = N, .K = W, .N = W, .prec = prec});
  be_->run(ops::AddInplaceArgs{.y = a.xm, .x = a.x, .n = N * W});
  layer_norm(ln_, a.st2, a.xm, p.ln2_w, p.ln2_b, W);
  be_->run(ops::LinearForwardArgs{
      .out = a.gate, .inp = ln_, .weight = p.g_w, .bias = p.g_b, .M = N, .K = W, .N = F, .prec = prec});
  be_->run(ops::LinearForwardArgs{
      .out = a.up, .inp = ln_, .weight = p.x_w, .bias = p.x_b, .M = N, .K = W, .N = F, .prec = prec});
  be_->run(ops::SwigluForwardArgs{.out = h_, .gate = a.gate, .x = a.up, .n = N * F});
  layer_norm(ln_, a.st3, h_, p.mn_w, p.mn_b, F);
  be_->run(ops::LinearForwardArgs{
      .out = out, .inp = ln_, .weight = p.fc2_w, .bias = p.fc2_b, .M = N, .K = F, .N = W, .prec = prec});
  be_->run(ops::AddInplaceArgs{.y = out, .x = a.xm, .n = N * W});
}

void EvaStack::forward(const std::vector<EvaBlockParams>& p, const float* sincos, const EvaDims& d) {
  OC_CHECK(d.B > 0 && d.B <= B_max_ && d.T == d_.T && int64_t(p.size()) == d_.L,
           "EVA02 block stack planned for batch <= {} of {} tokens, {} blocks; got batch {} of {}, {} blocks", B_max_,
           d_.T, d_.L, d.B, d.T, p.size());
  d_.B = d.B, d_.prec = d.prec;
  for (int64_t l = 0; l < d_.L; ++l) block_forward(p[size_t(l)], acts(l), x_slot(l + 1), sincos);
}

// out = xm + fc2(mlp.norm(silu(gate) * up)); d_res: d out in, d xm out.
void EvaStack::mlp_backward(const EvaBlockParams& p, const EvaBlockParams& g, const Acts& a, float* d_res) const {
  const int64_t N = d_.B * d_.T, W = d_.W, F = d_.F;
  const ops::Prec prec = d_.prec;
  be_->run(ops::SwigluForwardArgs{.out = h_, .gate = a.gate, .x = a.up, .n = N * F});  // recomputed
  layer_norm(ln_, stat_, h_, p.mn_w, p.mn_b, F);
  be_->run(ops::LinearBackwardArgs{.dinp = d_big_,
                                   .dweight = g.fc2_w,
                                   .dbias = g.fc2_b,
                                   .dout = d_res,
                                   .inp = ln_,
                                   .weight = p.fc2_w,
                                   .M = N,
                                   .K = F,
                                   .N = W,
                                   .prec = prec});
  be_->zero(d_f_, sizeof(float) * size_t(N * F));
  ln_backward(d_f_, g.mn_w, g.mn_b, d_big_, h_, p.mn_w, a.st3, F);
  // d gate in place over d h; d up into d_big_ (d hn is consumed).
  be_->run(ops::SwigluBackwardArgs{.dgate = d_f_, .dx = d_big_, .dout = d_f_, .gate = a.gate, .x = a.up, .n = N * F});
  layer_norm(ln_, stat_, a.xm, p.ln2_w, p.ln2_b, W);
  be_->run(ops::LinearBackwardArgs{.dinp = d_w_,
                                   .dweight = g.g_w,
                                   .dbias = g.g_b,
                                   .dout = d_f_,
                                   .inp = ln_,
                                   .weight = p.g_w,
                                   .M = N,
                                   .K = W,
                                   .N = F,
                                   .prec = prec});
  be_->run(ops::LinearBackwardArgs{.dinp = nullptr,
                                   .dweight = g.x_w,
                                   .dbias = g.x_b,
                                   .dout = d_big_,
                                   .inp = ln_,
                                   .weight = p.x_w,
                                   .M = N,
                                   .K = W,
                                   .N = F,
                                   .prec = prec});
  be_->run(ops::GemmArgs{false, false, N, W, F, 1.0f, d_big_, F, p.x_w, W, 1.0f, d_w_, W, prec});  // d b += d up @ Wx
  ln_backward(d_res, g.ln2_w, g.ln2_b, d_w_, a.xm, p.ln2_w, a.st2, W);  // accumulates onto the residual's
}

// xm = x + proj(attn.norm(attention(rope(qkv(norm1(x)))))); d_res: d xm in, d x out.
void EvaStack::attn_backward(const EvaBlockParams& p, const EvaBlockParams& g, const Acts& a, float* d_res,
                             const float* sincos) const {
  const int64_t N = d_.B * d_.T, W = d_.W;
  const ops::Prec prec = d_.prec;
  layer_norm(ln_, stat_, a.ao, p.an_w, p.an_b, W);
  be_->run(ops::LinearBackwardArgs{.dinp = d_w_,
                                   .dweight = g.proj_w,
                                   .dbias = g.proj_b,
                                   .dout = d_res,
                                   .inp = ln_,
                                   .weight = p.proj_w,
                                   .M = N,
                                   .K = W,
                                   .N = W,
                                   .prec = prec});
  be_->zero(d_w2_, sizeof(float) * size_t(N * W));
  ln_backward(d_w2_, g.an_w, g.an_b, d_w_, a.ao, p.an_w, a.sta, W);
  be_->run(ops::AttentionBackwardArgs{.dqkv = d_big_,
                                      .scratch = d_att_,
                                      .dout = d_w2_,
                                      .qkv = a.qkv,
                                      .att = a.att,
                                      .B = d_.B,
                                      .Tn = d_.T,
                                      .C = W,
                                      .H = d_.H,
                                      .causal = false,
                                      .prec = prec});
  be_->run(
      ops::RopeBackwardArgs{.dqkv = d_big_, .sincos = sincos, .B = d_.B, .T = d_.T, .W = W, .H = d_.H, .prefix = 1});
  layer_norm(ln_, stat_, a.x, p.ln1_w, p.ln1_b, W);
  const float* wts[3] = {p.q_w, p.k_w, p.v_w};
  float* dwts[3] = {g.q_w, g.k_w, g.v_w};
  for (int part = 0; part < 3; ++part) {
    const float* dp = d_big_ + part * W;  // [N, W] with row stride 3W
    be_->run(ops::GemmArgs{true, false, W, W, N, 1.0f, dp, 3 * W, ln_, W, 1.0f, dwts[part], W, prec});
    be_->run(ops::GemmArgs{false, false, N, W, W, 1.0f, dp, 3 * W, wts[part], W, part ? 1.0f : 0.0f, d_w_, W, prec});
  }
  be_->run(bias_grad(g.q_b, ones_, d_big_, 3 * W, N, W));
  be_->run(bias_grad(g.v_b, ones_, d_big_ + 2 * W, 3 * W, N, W));
  ln_backward(d_res, g.ln1_w, g.ln1_b, d_w_, a.x, p.ln1_w, a.st1, W);
}

float* EvaStack::backward(const std::vector<EvaBlockParams>& p, const std::vector<EvaBlockParams>& g,
                          const float* sincos, float* d_out, const EvaDims& d) {
  OC_CHECK(training_ && d.B == d_.B && g.size() == p.size(),
           "EVA02 block stack: backward needs the training plan and the last forward's batch");
  d_.prec = d.prec;
  for (int64_t l = d_.L - 1; l >= 0; --l) {
    const Acts a = acts(l);
    if (checkpoint_) block_forward(p[size_t(l)], a, d_w2_, sincos);  // recomputed; its output is not needed
    mlp_backward(p[size_t(l)], g[size_t(l)], a, d_out);
    attn_backward(p[size_t(l)], g[size_t(l)], a, d_out, sincos);
  }
  return d_out;
}

}  // namespace oc
