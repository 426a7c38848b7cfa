#include "model/text_transformer.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "model/tower_util.h"
#include "ops/embed.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/loss.h"

namespace oc {

std::unique_ptr<TextTower> make_text_tower(const ModelCfg& cfg, ops::Backend& be) {
  return std::make_unique<TransformerTextTower>(cfg, be);
}

StackDims TransformerTextTower::stack_dims(int64_t B, int64_t T, ops::Prec prec) const {
  const auto& t = cfg_.text;
  const StackShape s{.W = t.width,
                     .H = t.heads,
                     .F = t.mlp_width(),
                     .L = t.layers,
                     .causal = !t.no_causal_mask,
                     .act = t.gelu_tanh       ? ops::Act::GeluTanh
                            : cfg_.quick_gelu ? ops::Act::QuickGelu
                                              : ops::Act::Gelu,
                     .eps = t.ln_eps};
  return oc::stack_dims(B, T, s, prec, mem_, w16_, w8_, be_);
}

void TransformerTextTower::plan(const TowerPlan& plan) {
  const int64_t B = plan.B_max;
  B_max_ = B, training_ = plan.training;
  const auto& t = cfg_.text;
  const int64_t W = t.width, T = t.context_length, E = cfg_.embed_dim;
  mem_.set_label(fmt::format("{} text tower, batch {}", cfg_.name, B));
  mem_.plan(B, T, W, t.heads, t.mlp_width(), t.layers, plan.training, plan.checkpoint, plan.bf16_acts);
  const size_t BW = size_t(B * W), BE = size_t(B * E);
  extra_.bind(*be_, mem_.label() + " (pooling, projection, loss inputs)");
  BufferPlan()
      .add(&pooled_in_, BW).add(&pooled_, BW)                    // the pooled token before / after ln_final
      .add(&fin_mean_, size_t(B)).add(&fin_rstd_, size_t(B))      // ln_final statistics
      .add(&feat_raw_, BE).add(&feat_, BE).add(&norm_, size_t(B))
      .add(&d_feat_raw_, BE).add(&d_pooled_, BW).add(&d_pooled_in_, BW)
      .add(&d_stack_out_, size_t(B * T * W))
      .allocate(extra_);
  tok_.resize(size_t(B * T));
  eot_.resize(size_t(B));
}

const float* TransformerTextTower::forward(const int32_t* tokens, int64_t B, ops::Prec prec, bool normalize) {
  OC_CHECK(B > 0 && B <= B_max_, "text tower planned for batch <= {}, got {}", B_max_, B);
  OC_CHECK(p_, "text tower used before bind()");
  const ClipParams& p = *p_;
  B_ = B;
  const auto& t = cfg_.text;
  const int64_t ctx = t.context_length, W = t.width, E = cfg_.embed_dim, V = t.vocab_size;
  int64_t T = pool_positions(tokens, B);
  if (full_context_) T = ctx;
  T_ = T;
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(&tok_[size_t(b * T)], tokens + b * ctx, sizeof(int32_t) * size_t(T));
  BlockActs a0 = mem_.layer(0, B, T);
  be_->run(ops::TokenEmbedForwardArgs{.x = a0.x, .tokens = {tok_.data(), size_t(B * T)}, .wte = p.tok_emb,
                                      .wpe = p.t_pos, .B = B, .Tn = T, .C = W, .V = V});
  StackDims d = stack_dims(B, T, prec);
  stack_forward(p.t_blocks, mem_, d);
  be_->run(ops::GatherRowsForwardArgs{.out = pooled_in_, .inp = mem_.out(B, T), .idx = {eot_.data(), size_t(B)}, .B = B,
                                      .Tn = T, .C = W});
  be_->run(ops::LayerNormForwardArgs{.out = pooled_, .mean = fin_mean_, .rstd = fin_rstd_, .inp = pooled_in_,
                                     .weight = p.ln_final_w, .bias = p.ln_final_b, .N = B, .C = W, .eps = t.ln_eps});
  project_forward(p, B, prec);  // pooled_ -> feat_raw_
  if (!normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = E});
  return feat_;
}

void TransformerTextTower::backward(const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_ && g_, "text tower was planned for inference; backward needs training activations");
  const ClipParams &p = *p_, &g = *g_;
  const int64_t B = B_, T = T_;
  const auto& t = cfg_.text;
  const int64_t W = t.width, E = cfg_.embed_dim, V = t.vocab_size;
  be_->run(ops::L2NormBackwardArgs{.dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B, .C = E});
  project_backward(p, g, B, prec);  // d_feat_raw_ -> d_pooled_
  be_->zero(d_pooled_in_, sizeof(float) * size_t(B * W));
  be_->run(ops::LayerNormBackwardArgs{.dinp = d_pooled_in_, .dweight = g.ln_final_w, .dbias = g.ln_final_b,
                                      .dout = d_pooled_, .inp = pooled_in_, .weight = p.ln_final_w, .mean = fin_mean_,
                                      .rstd = fin_rstd_, .N = B, .C = W});
  be_->zero(d_stack_out_, sizeof(float) * size_t(B * T * W));
  be_->run(ops::GatherRowsBackwardArgs{.dinp = d_stack_out_, .dout = d_pooled_in_, .idx = {eot_.data(), size_t(B)},
                                       .B = B, .Tn = T, .C = W});
  StackDims d = stack_dims(B, T, prec);
  stack_backward(p.t_blocks, g.t_blocks, mem_, d_stack_out_, d);
  be_->run(ops::TokenEmbedBackwardArgs{.dwte = g.tok_emb, .dwpe = g.t_pos, .dx = mem_.d_res(),
                                       .tokens = {tok_.data(), size_t(B * T)}, .B = B, .Tn = T, .C = W, .V = V});
}

}  // namespace oc
