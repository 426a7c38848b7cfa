// The two towers of CLIP. Each owns its activation memory (planned once for a maximum
// batch) and runs forward to L2-normalized embeddings and backward from their gradients.
//   vision: conv1 (patches @ W^T) -> [cls; patches] + pos -> ln_pre -> blocks -> ln_post(CLS) -> @ proj
//   text:   tok_emb + pos -> causal blocks -> ln_final(x[eot]) -> @ text_projection
// The text tower runs only up to the batch's last end-of-text token: with a causal mask,
// later positions change neither the pooled output nor any gradient.
// OpenCLIP's options (tower_options.cpp): patch dropout after the positional embedding,
// no_ln_pre, average pooling and final_ln_after_pool; text pool first/last, no causal mask
// (then the full context runs), proj_bias. LayerScale is in the blocks.
// A timm vision tower (the SigLIP configs: no class token, MAP pooling) runs timm_vit.cpp
// between the patches and the embedding instead.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "model/config.h"
#include "model/params.h"
#include "model/timm_vit.h"
#include "model/transformer.h"

namespace oc {

// Where a forward's image batch is: host memory (the tower uploads it), or already in the
// backend's memory (Backend::prefetch, awaited by the caller).
enum class ImagesIn { Host, Backend };

class VisionTower {
 public:
  // bf16_acts: amp_bf16 with bf16 activations (then set_bf16_weights before forward).
  void plan(const ModelCfg& cfg, int64_t B_max, bool training, bool checkpoint = false, bool bf16_acts = false);
  void set_bf16_weights(const std::vector<BlockWeights16>* w16) { w16_ = w16; }
  // --precision int8 inference: the blocks' and the patch embedding's int8 weights (null: the bf16 ones).
  void set_int8_weights(const Int8Weights* w8) { w8_ = w8 ? &w8->vision() : nullptr, w8_all_ = w8; }
  void set_backend(ops::Backend& be) { be_ = &be, mem_.set_backend(be); }  // before plan()
  // images [B,3,S,S] (host memory, like the token ids: uploaded to the backend here) ->
  // features [B,E] (L2-normalized when normalize, the default). Keeps what backward needs when planned for training.
  // drop_patches: apply the config's patch dropout (the training step's forward; OpenCLIP's module in train mode).
  const float* forward(const ClipParams& p, const float* images, int64_t B, ops::Prec prec, bool normalize = true,
                       bool drop_patches = false, ImagesIn in = ImagesIn::Host);
  // Whether forward takes ImagesIn::Backend: not where a timm tower's conv drops a remainder
  // (the images are then cropped to the grid, on the host).
  bool takes_backend_images() const;
  // d_feat [B,E]: gradient w.r.t. the normalized features of the last forward.
  void backward(const ClipParams& p, const ClipParams& g, const float* d_feat, ops::Prec prec);
  double mib() const { return mem_.mib() + extra_.mib() + map_.mib(); }
  void set_block_hook(std::function<void(int64_t)> f) { mem_.on_block_backward = std::move(f); }
  // Patch dropout (vision_cfg.patch_dropout > 0, training forwards only). Which patches each
  // sample keeps: K distinct indices in [0, Np) per sample, written to idx[B*K]. The default
  // draws a uniformly random ordered subset per sample (as OpenCLIP's topk of randn) from
  // mix_seed(seed, forward number); tests may replace it.
  using PatchKeepFn = std::function<void(int64_t B, int64_t Np, int64_t K, int32_t* idx)>;
  void set_patch_keep(PatchKeepFn f) { patch_keep_ = std::move(f); }
  void set_patch_dropout_seed(uint64_t seed) { dropout_seed_ = seed, dropout_calls_ = 0; }
  // How many dropout draws the stream has made (a checkpoint keeps it: exact resume).
  uint64_t patch_dropout_draws() const { return dropout_calls_; }
  void set_patch_dropout_draws(uint64_t n) { dropout_calls_ = n; }
  // Tokens the stack ran on in the last forward (1 + kept patches with patch dropout).
  int64_t tokens_used() const { return T_; }
  // max(1, int(Np * (1 - prob))): OpenCLIP's PatchDropout count.
  static int64_t patches_kept(int64_t Np, double prob);
  // The default draw: per sample a uniformly random ordered K-subset of [0, Np) (partial
  // Fisher-Yates from one stream per sample). Not torch's generator: the same seed does not
  // give OpenCLIP's patches, only the same distribution.
  static void random_patch_keep(uint64_t seed, int64_t B, int64_t Np, int64_t K, int32_t* idx);

 private:
  // The OpenCLIP options, in tower_options.cpp.
  const float* patch_dropout_forward(int64_t B);  // returns the embeddings the stack starts from
  void patch_dropout_backward(int64_t B);         // d_stack_out_ (d of those) -> d_x0_
  void ln_pre_forward(const ClipParams& p, float* out, const float* emb, int64_t B);
  void ln_pre_backward(const ClipParams& p, const ClipParams& g, float* d_emb, int64_t B);
  void pool_forward(const ClipParams& p, int64_t B);
  void pool_backward(const ClipParams& p, const ClipParams& g, int64_t B);
  bool dropping() const { return drop_; }
  StackDims stack_dims(int64_t B, ops::Prec prec) const;  // the block stack at the tokens in use
  // The timm tower (timm_vit.cpp): patches_ -> feat_raw_, and back to parameter gradients.
  void timm_plan(int64_t B);
  void timm_forward(const ClipParams& p, int64_t B, ops::Prec prec);
  void timm_backward(const ClipParams& p, const ClipParams& g, int64_t B, ops::Prec prec);
  // The top-left grid*P pixels of each image (a timm tower at 384 with patch 14: timm's conv
  // of stride 14 never reads the last 6 rows and columns), in crop_ (host memory).
  const float* crop_to_grid(const float* images, int64_t B);
  std::vector<float> crop_;

  ModelCfg cfg_;
  StackMemory mem_;
  ops::FloatArena extra_;
  MapHead map_;  // timm towers only
  const std::vector<BlockWeights16>* w16_ = nullptr;
  const std::vector<BlockWeightsInt8>* w8_ = nullptr;
  const Int8Weights* w8_all_ = nullptr;
  int64_t B_max_ = 0, B_ = 0, T_ = 0;
  PatchKeepFn patch_keep_;
  uint64_t dropout_seed_ = 0, dropout_calls_ = 0;
  bool drop_ = false;          // the last forward dropped patches
  std::vector<int32_t> keep_;  // [B, 1+K] token indices gathered by patch dropout (0: the class token)
  float* x_drop_ = nullptr;    // [B, 1+K, W] the kept embeddings
  float* ln_all_ = nullptr;    // [B, T, W] ln_post of every token (pool_type avg without final_ln_after_pool)
  ops::Backend* be_ = &ops::default_backend();
  bool training_ = false;
  std::vector<int32_t> cls_index_;  // B_max zeros: the class token's position, for pooling
  float* images_ = nullptr;         // [B,3,S,S] the batch in backend memory (device backends only)
  float *patches_, *patch_out_, *x0_, *pre_mean_, *pre_rstd_, *cls_in_, *pooled_, *post_mean_, *post_rstd_,
      *feat_raw_, *feat_, *norm_, *d_feat_raw_, *d_pooled_, *d_cls_in_, *d_stack_out_, *d_x0_, *d_patch_out_;
};

class TextTower {
 public:
  // bf16_acts: amp_bf16 with bf16 activations (then set_bf16_weights before forward).
  void plan(const ModelCfg& cfg, int64_t B_max, bool training, bool checkpoint = false, bool bf16_acts = false);
  void set_bf16_weights(const std::vector<BlockWeights16>* w16) { w16_ = w16; }
  // --precision int8 inference: the blocks' int8 weights (null: the bf16 ones).
  void set_int8_weights(const std::vector<BlockWeightsInt8>* w8) { w8_ = w8; }
  void set_backend(ops::Backend& be) { be_ = &be, mem_.set_backend(be); }  // before plan()
  // tokens [B, context_length] -> features [B,E]. Token ids outside the vocabulary are an
  // error naming the row, position and id.
  const float* forward(const ClipParams& p, const int32_t* tokens, int64_t B, ops::Prec prec, bool normalize = true);
  void backward(const ClipParams& p, const ClipParams& g, const float* d_feat, ops::Prec prec);
  int64_t tokens_used() const { return T_; }  // positions computed in the last forward
  // Forces the full context (for tests comparing against the truncated computation).
  void set_full_context(bool full) { full_context_ = full; }
  void set_block_hook(std::function<void(int64_t)> f) { mem_.on_block_backward = std::move(f); }
  double mib() const { return mem_.mib() + extra_.mib(); }

 private:
  // The OpenCLIP options, in tower_options.cpp.
  int64_t pool_positions(const int32_t* tokens, int64_t B);  // fills eot_, returns the tokens to compute
  void project_forward(const ClipParams& p, int64_t B, ops::Prec prec);
  void project_backward(const ClipParams& p, const ClipParams& g, int64_t B, ops::Prec prec);

  ModelCfg cfg_;
  StackMemory mem_;
  ops::FloatArena extra_;
  const std::vector<BlockWeights16>* w16_ = nullptr;
  const std::vector<BlockWeightsInt8>* w8_ = nullptr;
  ops::Backend* be_ = &ops::default_backend();
  std::vector<int32_t> tok_, eot_;
  int64_t B_max_ = 0, B_ = 0, T_ = 0;
  bool training_ = false, full_context_ = false;
  float *pooled_in_, *pooled_, *fin_mean_, *fin_rstd_, *feat_raw_, *feat_, *norm_, *d_feat_raw_, *d_pooled_,
      *d_pooled_in_, *d_stack_out_;
};

}  // namespace oc
