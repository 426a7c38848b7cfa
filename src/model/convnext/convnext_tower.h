// timm's ConvNeXt as OpenCLIP 2.24's TimmModel wraps it (the convnext_* configs,
// config_convnext.h), channels-last throughout:
//   stem:   4x4 / 4 conv with bias (the images cut into 4x4 patches and one GEMM, as a ViT's
//           patch embedding) -> LayerNorm2d (a LayerNorm over each pixel's channels)
//   stages 0..3, each: [stages 1..3: downsample = LayerNorm2d -> 2x2 / 2 conv with bias]
//           then blocks: x + gamma * fc2(GELU(fc1(LayerNorm(conv_dw(x))))), conv_dw the 7x7
//           depthwise conv with bias (ops/dwconv.h), gamma timm's layer scale
//   trunk.head (timm's NormMlpClassifierHead with num_classes 0): the mean over the map, then
//           LayerNorm (head.norm)
//   TimmModel's head: "linear" -> head.proj (no bias); "mlp" -> head.mlp: fc1 (bias) -> GELU ->
//           fc2 (no bias), 2E wide
// Parameters under OpenCLIP + timm's state_dict names (visual.trunk.*, visual.head.*;
// convnext_params.cpp). Stochastic depth (timm_drop_path, 0.1 in every OpenCLIP config): timm's
// DropPath on each block's branch in training forwards; inference ignores it (timm's eval mode).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/convnext/config_convnext.h"
#include "model/image_tower.h"
#include "ops/backend.h"

namespace oc {

class BufferPlan;

// One ConvNeXtBlock (visual.trunk.stages.s.blocks.b.*).
struct ConvNextBlockParams {
  float *gamma = nullptr, *dw_w = nullptr, *dw_b = nullptr, *ln_w = nullptr, *ln_b = nullptr, *fc1_w = nullptr,
        *fc1_b = nullptr, *fc2_w = nullptr, *fc2_b = nullptr;
};
struct ConvNextStageParams {
  // downsample.0 (LayerNorm2d) and downsample.1 (conv [C, C_prev, 2, 2] + bias): stages 1..3.
  float *ds_ln_w = nullptr, *ds_ln_b = nullptr, *ds_w = nullptr, *ds_b = nullptr;
  std::vector<ConvNextBlockParams> blocks;
};
struct ConvNextParams {
  float *stem_w = nullptr, *stem_b = nullptr, *stem_ln_w = nullptr, *stem_ln_b = nullptr;
  ConvNextStageParams stages[4];
  float *head_ln_w = nullptr, *head_ln_b = nullptr;
  float* proj_w = nullptr;                                                 // "linear": visual.head.proj.weight [E, C]
  float *mlp_fc1_w = nullptr, *mlp_fc1_b = nullptr, *mlp_fc2_w = nullptr;  // "mlp": [2E, C], [2E], [E, 2E]
};

class ConvNextTower final : public ImageTower {
 public:
  ConvNextTower(const ModelCfg& cfg, ops::Backend& be);
  const char* family() const override { return "timm ConvNeXt"; }
  std::string describe() const override;

  // config_convnext.cpp: the timm model name and head keys.
  void write_vision_cfg(nlohmann::json* v) const override;
  void check_config(const std::string& where) const override;

  // convnext_params.cpp.
  void add_params(ParamTable& t) const override;
  bool init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const override;
  void bind(const ParamTable& t, float* params, float* grads) override;
  const std::vector<BlockParams>& blocks() const override { return no_blocks_; }
  std::string block_prefix(int i) const override;
  // OpenCLIP groups a timm trunk with timm's group_matcher (not built): locked whole only.
  void check_unlocked_groups(int unlocked) const override;
  int lock_groups() const override { return 1; }
  int lock_group(const std::string& name) const override { return name.rfind("visual.", 0) == 0 ? 0 : -1; }
  std::string int8_refusal() const override;
  std::string patch_dropout_refusal() const override;

  void plan(const TowerPlan& plan) override;
  // NCHW images, cut into the stem's 4x4 patches on the backend (as the ViTs' patch embedding).
  ImageInput input() const override { return {.backend_images = true}; }
  const float* forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) override;
  void backward(const float* d_feat, ops::Prec prec) override;
  double mib() const override { return arena_.mib(); }
  double forward_macs() const override;
  // Every gradient is complete only when backward returns (one bucket after it).
  void set_block_hook(std::function<void(int64_t)>) override {}

  // ---- stochastic depth (timm's DropPath; convnext_drop_path.cpp) ----------------------
  // Block k of the n blocks (counted over the stages) drops its branch, gamma * fc2(...), for a
  // sample with probability dp_rates[k] and scales a kept branch by 1 / keep: timm's
  // DropPath(scale_by_keep=True), x * (bernoulli(keep) / keep) per sample. Drawn in training
  // forwards only, from our seeded stream: not torch's generator, the same distribution. It is
  // the stream ImageTower calls the patch-dropout stream (one per tower): seeded per rank by the
  // trainer, its position kept in checkpoints for an exact resume.
  // timm's dp_rates: torch.linspace(0, rate, n) in float32, as Python floats.
  static std::vector<double> drop_rates(double rate, int n);
  // The default draw of block k at forward number `call`: scale[b] = 1/keep (as float32, as
  // torch's div_ by the Python float) or 0, one uniform per sample from mix_seed(seed, call, k).
  static void draw_drop_scales(uint64_t seed, uint64_t call, int k, double keep, int64_t B, float* scale);
  // Tests: replaces the draw (block k, its keep probability, the batch; writes scale[B]).
  using DropPathFn = std::function<void(int k, double keep, int64_t B, float* scale)>;
  void set_drop_path_draw(DropPathFn f) { drop_draw_ = std::move(f); }
  void set_patch_dropout_seed(uint64_t seed) override { drop_seed_ = seed, drop_calls_ = 0; }
  uint64_t patch_dropout_draws() const override { return drop_calls_; }
  void set_patch_dropout_draws(uint64_t n) override { drop_calls_ = n; }
  // The scales of the last training forward, [blocks, B] (empty when it drew none).
  const std::vector<float>& drop_path_scales() const { return drop_scale_; }

 private:
  // A block's activations: its input (the previous output), the depthwise conv's output, the
  // LayerNorm's statistics and output, fc1's output and its GELU, fc2's output (before gamma)
  // and the block's output. Training keeps every block's; inference shares one set per stage.
  struct BlockActs {
    const float* x = nullptr;
    float *y1 = nullptr, *mean = nullptr, *rstd = nullptr, *y2 = nullptr, *h = nullptr, *a = nullptr, *z = nullptr,
          *out = nullptr;
  };
  struct StageActs {
    int64_t H = 0, C = 0;                                                               // square maps: H x H x C
    float *ds_ln = nullptr, *ds_mean = nullptr, *ds_rstd = nullptr, *ds_out = nullptr;  // stages 1..3
    std::vector<BlockActs> blocks;
  };
  int64_t rows(const StageActs& s) const { return B_ * s.H * s.H; }
  // LayerNorm over N channels-last rows of C (eps: the model's); dx assigned, dw and db accumulate.
  void ln_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b, int64_t N,
                  int64_t C);
  void ln_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w, const float* mean,
                   const float* rstd, int64_t N, int64_t C);
  void plan_stages(BufferPlan& bp);
  void plan_head(BufferPlan& bp);
  // k: the block's index over all stages (its stochastic depth scales).
  void block_forward(const StageActs& s, const BlockActs& a, const ConvNextBlockParams& p, int k, ops::Prec prec);
  // d (the gradient of the block's output) becomes the gradient of its input.
  void block_backward(const StageActs& s, const BlockActs& a, const ConvNextBlockParams& p,
                      const ConvNextBlockParams& g, int k, float* d, ops::Prec prec);
  int first_block(int stage) const;  // index over all stages of the stage's block 0
  // Draws every block's scales for this forward (drop_scale_), or none outside training.
  void draw_drop_path(bool train);
  // x[B, n] *= block k's scale of each sample (x * 0 for a dropped one, as torch: NaN stays NaN).
  void drop_path(float* x, int k, int64_t n);
  void stage_forward(int i, const float* x, ops::Prec prec);
  // d: the gradient of stage i's output; returns the buffer holding that of its input.
  float* stage_backward(int i, float* d, float* spare, ops::Prec prec);
  void head_forward(ops::Prec prec);
  void head_backward(ops::Prec prec);

  int64_t dim(size_t stage) const { return spec_.dims[stage]; }  // channels
  int depth(size_t stage) const { return spec_.depths[stage]; }  // blocks

  ModelCfg cfg_;
  ops::Backend* be_;
  const ConvNextSpec& spec_;  // the timm model's stages
  ConvNextParams p_, g_;      // g_: bound when the model trains
  std::vector<BlockParams> no_blocks_;
  ops::FloatArena arena_;
  int64_t B_max_ = 0, B_ = 0;
  bool training_ = false;
  StageActs st_[4];
  float *images_ = nullptr, *patches_ = nullptr, *stem_conv_ = nullptr, *stem_mean_ = nullptr, *stem_rstd_ = nullptr,
        *stem_out_ = nullptr;
  // head: the pooled map, head.norm's statistics and output, the MLP head's fc1 output and
  // GELU, the features; their gradients
  float *pooled_ = nullptr, *head_mean_ = nullptr, *head_rstd_ = nullptr, *head_ln_ = nullptr, *head_h_ = nullptr,
        *head_a_ = nullptr, *feat_raw_ = nullptr, *feat_ = nullptr, *norm_ = nullptr;
  float *d_feat_raw_ = nullptr, *d_head_ln_ = nullptr, *d_pooled_ = nullptr, *d_head_a_ = nullptr;
  // backward scratch: two maps of the largest stage (rows x channels), one MLP-wide
  float *dA_ = nullptr, *dB_ = nullptr, *s1_ = nullptr, *s2_ = nullptr, *sF_ = nullptr;
  // stochastic depth: each block's drop probability, the scales drawn [blocks, B] (empty: none)
  std::vector<double> drop_prob_;
  std::vector<float> drop_scale_;
  uint64_t drop_seed_ = 0, drop_calls_ = 0;
  DropPathFn drop_draw_;
};

}  // namespace oc
