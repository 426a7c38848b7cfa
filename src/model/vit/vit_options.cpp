// The OpenCLIP 2.24.0 vision tower options beyond plain CLIP (vision_cfg keys), as
// VisionTransformer computes them (transformer.py): PatchDropout (training forwards only; our
// seeded stream, per rank in training, its position saved in checkpoints), no_ln_pre,
// pool_type tok|avg, final_ln_after_pool. LayerScale lives in the blocks (transformer.cpp,
// block_bf16.cpp).
#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/rng.h"
#include "model/vit/vit_tower.h"
#include "ops/embed.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/tokens.h"

namespace oc {

int64_t VisionTower::patches_kept(int64_t Np, double prob) {
  return std::max<int64_t>(1, int64_t(double(Np) * (1.0 - prob)));  // Python's int() truncates
}

// K distinct patches per sample, a uniformly random ordered subset (what topk of iid randn
// gives): a partial Fisher-Yates shuffle from one seeded stream per sample.
void VisionTower::random_patch_keep(uint64_t seed, int64_t B, int64_t Np, int64_t K, int32_t* idx) {
  std::vector<int32_t> perm(static_cast<size_t>(Np));
  for (int64_t b = 0; b < B; ++b) {
    Rng rng(mix_seed(seed, uint64_t(b)));
    for (int64_t i = 0; i < Np; ++i) perm[size_t(i)] = int32_t(i);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t j = k + int64_t(rng.below(uint64_t(Np - k)));
      std::swap(perm[size_t(k)], perm[size_t(j)]);
      idx[b * K + k] = perm[size_t(k)];
    }
  }
}

const float* VisionTower::patch_dropout_forward(int64_t B) {
  const auto& v = cfg_.vision;
  const int64_t T = v.tokens(), Np = T - 1;
  if (!dropping()) {
    T_ = T;
    return x0_;
  }
  const int64_t K = patches_kept(Np, v.patch_dropout), Tk = K + 1;
  std::vector<int32_t> pick(size_t(B * K));
  if (patch_keep_) patch_keep_(B, Np, K, pick.data());
  else random_patch_keep(mix_seed(dropout_seed_, dropout_calls_), B, Np, K, pick.data());
  ++dropout_calls_;
  keep_.resize(size_t(B * Tk));
  for (int64_t b = 0; b < B; ++b) {
    keep_[size_t(b * Tk)] = 0;  // the class token is always kept, first
    for (int64_t k = 0; k < K; ++k) {
      const int32_t i = pick[size_t(b * K + k)];
      OC_CHECK(i >= 0 && i < Np, "patch dropout: kept patch {} of sample {} outside [0, {})", i, b, Np);
      keep_[size_t(b * Tk + 1 + k)] = i + 1;
    }
  }
  T_ = Tk;
  be_->run(ops::GatherTokensForwardArgs{.out = x_drop_, .inp = x0_, .idx = {keep_.data(), size_t(B * Tk)}, .B = B,
                                        .Tn = T, .K = Tk, .C = int64_t(v.width)});
  return x_drop_;
}

void VisionTower::patch_dropout_backward(int64_t B) {
  if (!dropping()) return;  // ln_pre_backward wrote d_x0_ directly
  const int64_t T = cfg_.vision.tokens(), W = cfg_.vision.width;
  be_->zero(d_x0_, sizeof(float) * size_t(B * T * W));
  be_->run(ops::GatherTokensBackwardArgs{.dinp = d_x0_, .dout = d_stack_out_, .idx = {keep_.data(), size_t(B * T_)},
                                         .B = B, .Tn = T, .K = T_, .C = W});
}

void VisionTower::ln_pre_forward(const VitParams& p, float* out, const float* emb, int64_t B) {
  const int64_t W = cfg_.vision.width;
  if (cfg_.vision.no_ln_pre) be_->copy(out, emb, sizeof(float) * size_t(B * T_ * W));
  else
    be_->run(ops::LayerNormForwardArgs{.out = out, .mean = pre_mean_, .rstd = pre_rstd_, .inp = emb,
                                       .weight = p.ln_pre_w, .bias = p.ln_pre_b, .N = B * T_, .C = W,
                                       .eps = cfg_.vision.ln_eps});
}

void VisionTower::ln_pre_backward(const VitParams& p, const VitParams& g, float* d_emb, int64_t B) {
  const int64_t W = cfg_.vision.width, N = B * T_;
  if (cfg_.vision.no_ln_pre) return be_->copy(d_emb, mem_.d_res(), sizeof(float) * size_t(N * W));
  be_->zero(d_emb, sizeof(float) * size_t(N * W));
  const float* emb = dropping() ? x_drop_ : x0_;
  be_->run(ops::LayerNormBackwardArgs{.dinp = d_emb, .dweight = g.ln_pre_w, .dbias = g.ln_pre_b, .dout = mem_.d_res(),
                                      .inp = emb, .weight = p.ln_pre_w, .mean = pre_mean_, .rstd = pre_rstd_, .N = N,
                                      .C = W});
}

// tok: ln_post(x)[:, 0] (LayerNorm is per token, so ln_post of the class token alone);
// avg: mean of the patch tokens, after ln_post of every token, or (final_ln_after_pool)
// ln_post of the mean.
void VisionTower::pool_forward(const VitParams& p, int64_t B) {
  const auto& v = cfg_.vision;
  const int64_t W = v.width;
  const float* x = mem_.out(B, T_);
  if (v.avg_pool && !v.final_ln_after_pool) {
    be_->run(ops::LayerNormForwardArgs{.out = ln_all_, .mean = post_mean_, .rstd = post_rstd_, .inp = x,
                                       .weight = p.ln_post_w, .bias = p.ln_post_b, .N = B * T_, .C = W,
                                       .eps = cfg_.vision.ln_eps});
    be_->run(ops::MeanTokensForwardArgs{.out = pooled_, .inp = ln_all_, .B = B, .Tn = T_, .first = 1, .C = W});
    return;
  }
  if (v.avg_pool)
    be_->run(ops::MeanTokensForwardArgs{.out = cls_in_, .inp = x, .B = B, .Tn = T_, .first = 1, .C = W});
  else
    be_->run(ops::GatherRowsForwardArgs{.out = cls_in_, .inp = x, .idx = {cls_index_.data(), size_t(B)}, .B = B,
                                        .Tn = T_, .C = W});  // the class token
  be_->run(ops::LayerNormForwardArgs{.out = pooled_, .mean = post_mean_, .rstd = post_rstd_, .inp = cls_in_,
                                     .weight = p.ln_post_w, .bias = p.ln_post_b, .N = B, .C = W,
                                     .eps = cfg_.vision.ln_eps});
}

void VisionTower::pool_backward(const VitParams& p, const VitParams& g, int64_t B) {
  const auto& v = cfg_.vision;
  const int64_t W = v.width, N = B * T_;
  be_->zero(d_stack_out_, sizeof(float) * size_t(N * W));
  const float* x = mem_.out(B, T_);
  if (v.avg_pool && !v.final_ln_after_pool) {
    float* d_ln = d_x0_;  // free until ln_pre's backward
    be_->zero(d_ln, sizeof(float) * size_t(N * W));
    be_->run(ops::MeanTokensBackwardArgs{.dinp = d_ln, .dout = d_pooled_, .B = B, .Tn = T_, .first = 1, .C = W});
    be_->run(ops::LayerNormBackwardArgs{.dinp = d_stack_out_, .dweight = g.ln_post_w, .dbias = g.ln_post_b,
                                        .dout = d_ln, .inp = x, .weight = p.ln_post_w, .mean = post_mean_,
                                        .rstd = post_rstd_, .N = N, .C = W});
    return;
  }
  be_->zero(d_cls_in_, sizeof(float) * size_t(B * W));
  be_->run(ops::LayerNormBackwardArgs{.dinp = d_cls_in_, .dweight = g.ln_post_w, .dbias = g.ln_post_b,
                                      .dout = d_pooled_, .inp = cls_in_, .weight = p.ln_post_w, .mean = post_mean_,
                                      .rstd = post_rstd_, .N = B, .C = W});
  if (v.avg_pool)
    be_->run(
        ops::MeanTokensBackwardArgs{.dinp = d_stack_out_, .dout = d_cls_in_, .B = B, .Tn = T_, .first = 1, .C = W});
  else
    be_->run(ops::GatherRowsBackwardArgs{.dinp = d_stack_out_, .dout = d_cls_in_, .idx = {cls_index_.data(), size_t(B)},
                                         .B = B, .Tn = T_, .C = W});
}

}  // namespace oc
