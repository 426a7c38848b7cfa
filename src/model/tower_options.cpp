// The OpenCLIP 2.24.0 tower options beyond plain CLIP (vision_cfg / text_cfg keys), as
// VisionTransformer and TextTransformer compute them (transformer.py):
//   vision: PatchDropout (training forwards only; our seeded stream, per rank in training,
//           its position saved in checkpoints), no_ln_pre, pool_type tok|avg, final_ln_after_pool;
//   text:   pool_type argmax|first|last, no_causal_mask (full context), proj_bias (nn.Linear).
// LayerScale lives in the blocks (transformer.cpp, block_bf16.cpp).
#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/rng.h"
#include "model/towers.h"
#include "ops/embed.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/tokens.h"

namespace oc {

// ------------------------------------------------------------------------ vision
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
  be_->gather_tokens_forward(x_drop_, x0_, keep_.data(), B, T, Tk, int64_t(v.width));
  return x_drop_;
}

void VisionTower::patch_dropout_backward(int64_t B) {
  if (!dropping()) return;  // ln_pre_backward wrote d_x0_ directly
  const int64_t T = cfg_.vision.tokens(), W = cfg_.vision.width;
  be_->zero(d_x0_, sizeof(float) * size_t(B * T * W));
  be_->gather_tokens_backward(d_x0_, d_stack_out_, keep_.data(), B, T, T_, W);
}

void VisionTower::ln_pre_forward(const ClipParams& p, float* out, const float* emb, int64_t B) {
  const int64_t W = cfg_.vision.width;
  if (cfg_.vision.no_ln_pre) be_->copy(out, emb, sizeof(float) * size_t(B * T_ * W));
  else be_->layernorm_forward(out, pre_mean_, pre_rstd_, emb, p.ln_pre_w, p.ln_pre_b, B * T_, W, cfg_.ln_eps);
}

void VisionTower::ln_pre_backward(const ClipParams& p, const ClipParams& g, float* d_emb, int64_t B) {
  const int64_t W = cfg_.vision.width, N = B * T_;
  if (cfg_.vision.no_ln_pre) return be_->copy(d_emb, mem_.d_res(), sizeof(float) * size_t(N * W));
  be_->zero(d_emb, sizeof(float) * size_t(N * W));
  const float* emb = dropping() ? x_drop_ : x0_;
  be_->layernorm_backward(d_emb, g.ln_pre_w, g.ln_pre_b, mem_.d_res(), emb, p.ln_pre_w, pre_mean_, pre_rstd_, N, W);
}

// tok: ln_post(x)[:, 0] (LayerNorm is per token, so ln_post of the class token alone);
// avg: mean of the patch tokens, after ln_post of every token, or (final_ln_after_pool)
// ln_post of the mean.
void VisionTower::pool_forward(const ClipParams& p, int64_t B) {
  const auto& v = cfg_.vision;
  const int64_t W = v.width;
  const float* x = mem_.out(B, T_);
  if (v.avg_pool && !v.final_ln_after_pool) {
    be_->layernorm_forward(ln_all_, post_mean_, post_rstd_, x, p.ln_post_w, p.ln_post_b, B * T_, W, cfg_.ln_eps);
    be_->mean_tokens_forward(pooled_, ln_all_, B, T_, 1, W);
    return;
  }
  if (v.avg_pool) be_->mean_tokens_forward(cls_in_, x, B, T_, 1, W);
  else be_->gather_rows_forward(cls_in_, x, cls_index_.data(), B, T_, W);  // the class token
  be_->layernorm_forward(pooled_, post_mean_, post_rstd_, cls_in_, p.ln_post_w, p.ln_post_b, B, W, cfg_.ln_eps);
}

void VisionTower::pool_backward(const ClipParams& p, const ClipParams& g, int64_t B) {
  const auto& v = cfg_.vision;
  const int64_t W = v.width, N = B * T_;
  be_->zero(d_stack_out_, sizeof(float) * size_t(N * W));
  const float* x = mem_.out(B, T_);
  if (v.avg_pool && !v.final_ln_after_pool) {
    float* d_ln = d_x0_;  // free until ln_pre's backward
    be_->zero(d_ln, sizeof(float) * size_t(N * W));
    be_->mean_tokens_backward(d_ln, d_pooled_, B, T_, 1, W);
    be_->layernorm_backward(d_stack_out_, g.ln_post_w, g.ln_post_b, d_ln, x, p.ln_post_w, post_mean_, post_rstd_, N,
                            W);
    return;
  }
  be_->zero(d_cls_in_, sizeof(float) * size_t(B * W));
  be_->layernorm_backward(d_cls_in_, g.ln_post_w, g.ln_post_b, d_pooled_, cls_in_, p.ln_post_w, post_mean_,
                          post_rstd_, B, W);
  if (v.avg_pool) be_->mean_tokens_backward(d_stack_out_, d_cls_in_, B, T_, 1, W);
  else be_->gather_rows_backward(d_stack_out_, d_cls_in_, cls_index_.data(), B, T_, W);
}

// ------------------------------------------------------------------------ text
// Validates the ids and sets each row's pooled position: argmax of the ids (the first
// maximum, as torch.argmax: the end-of-text token), the first or the last position. Returns
// how many positions to compute: with a causal mask nothing after the pooled position reaches
// the output; without one every position does.
int64_t TextTower::pool_positions(const int32_t* tokens, int64_t B) {
  const auto& t = cfg_.text;
  const int64_t ctx = t.context_length, V = t.vocab_size;
  int64_t T = 1;
  for (int64_t b = 0; b < B; ++b) {
    const int32_t* row = tokens + b * ctx;
    int64_t best = 0;
    for (int64_t i = 0; i < ctx; ++i) {
      if ((row[i] < 0 || row[i] >= V) && !t.hf_tokenizer_name.empty())
        OC_USER_ERROR("token id {} at row {}, position {} is outside the vocabulary [0, {}): this model tokenizes "
                      "with {} (WordPiece), and the ids were made by another tokenizer. The data loader and "
                      "evaluation still tokenize with CLIP's BPE: tokenize with `openclip tokenize --model {}` "
                      "for this model",
                      row[i], b, i, V, t.hf_tokenizer_name, cfg_.name);
      if (row[i] < 0 || row[i] >= V)
        OC_USER_ERROR("token id {} at row {}, position {} is outside the vocabulary [0, {})", row[i], b, i, V);
      if (row[i] > row[best]) best = i;
    }
    const int64_t pos = t.pool == TextCfg::Pool::Argmax ? best : t.pool == TextCfg::Pool::First ? 0 : ctx - 1;
    eot_[size_t(b)] = int32_t(pos);
    T = std::max(T, pos + 1);
  }
  return t.no_causal_mask ? ctx : T;
}

// text_projection: x @ P ([W,E] parameter), or with proj_bias nn.Linear: x @ weight^T + bias.
void TextTower::project_forward(const ClipParams& p, int64_t B, ops::Prec prec) {
  const int64_t W = cfg_.text.width, E = cfg_.embed_dim;
  if (cfg_.text.proj_bias) be_->linear_forward(feat_raw_, pooled_, p.t_proj, p.t_proj_b, B, W, E, prec);
  else be_->proj_forward(feat_raw_, pooled_, p.t_proj, B, W, E, prec);
}

void TextTower::project_backward(const ClipParams& p, const ClipParams& g, int64_t B, ops::Prec prec) {
  const int64_t W = cfg_.text.width, E = cfg_.embed_dim;
  if (cfg_.text.proj_bias)
    be_->linear_backward(d_pooled_, g.t_proj, g.t_proj_b, d_feat_raw_, pooled_, p.t_proj, B, W, E, prec);
  else
    be_->proj_backward(d_pooled_, g.t_proj, d_feat_raw_, pooled_, p.t_proj, B, W, E, prec);
}

}  // namespace oc
