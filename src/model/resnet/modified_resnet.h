// OpenCLIP's ModifiedResNet image tower (the RN50 ... RN50x64 configs), forward and backward:
//   stem: 3x3/2 conv -> bn -> relu -> 3x3 conv -> bn -> relu -> 3x3 conv -> bn -> relu -> avgpool 2
//   layer1..4: Bottleneck blocks (1x1 -> 3x3 -> [avgpool s] -> 1x1, x4 channels; identity through
//     avgpool s -> 1x1 conv -> bn where the shape changes: the anti-aliased stride)
//   attnpool: the map's H*W tokens with their mean prepended, + positional embedding,
//     multi-head cross attention of the mean token (q projection) over all H*W+1 tokens (k/v
//     projections; projections with bias) -> c_proj
// Activations are channels-last (ops/conv.h). BatchNorm runs in train mode (batch statistics,
// running statistics updated, num_batches_tracked counted) in the training forward unless
// frozen (--lock-image-freeze-bn-stats), and in eval mode (running statistics) otherwise.
// The attention pool queries with the mean token only (OpenAI's AttentionPool2d); OpenCLIP
// 2.24.0 queries with every token and keeps the mean token's row, the same result for 1/3 more
// projection work and T times the attention work.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/image_tower.h"
#include "model/resnet/config_resnet.h"
#include "model/resnet/resnet_params.h"
#include "ops/backend.h"
#include "ops/conv.h"

namespace oc {

class ResNetTower final : public ImageTower {
 public:
  ResNetTower(const ModelCfg& cfg, ops::Backend& be) : cfg_(cfg), be_(&be) {}
  ~ResNetTower() override { release_prepared(); }
  ResNetTower(const ResNetTower&) = delete;
  ResNetTower& operator=(const ResNetTower&) = delete;
  const char* family() const override { return "ModifiedResNet"; }
  std::string describe() const override;

  // resnet_params.cpp: the parameters (and BatchNorm buffers), their binding and initialisation.
  void write_vision_cfg(nlohmann::json* v) const override;
  void check_config(const std::string& where) const override { check_resnet_widths(cfg_.vision, where); }

  void add_params(ParamTable& t) const override { add_resnet_params(t, cfg_); }
  bool init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const override;
  void bind(const ParamTable& t, float* params, float* grads) override;
  const std::vector<BlockParams>& blocks() const override { return no_blocks_; }
  std::string block_prefix(int i) const override;
  // ModifiedResNet.lock: every parameter frozen; partial locking is refused (asserted).
  void check_unlocked_groups(int unlocked) const override;
  int lock_groups() const override { return 1; }
  int lock_group(const std::string& name) const override { return name.rfind("visual.", 0) == 0 ? 0 : -1; }
  void set_freeze_bn_stats(bool frozen) override { freeze_bn_stats_ = frozen; }
  std::string int8_refusal() const override {
    return "has a ModifiedResNet image tower; the int8 path is built for ViT towers only";
  }

  // The bound parameters' channel counts shape the activations: after bind().
  void plan(const TowerPlan& plan) override;
  void weights_changed() override { release_prepared(); }
  // NCHW from the host, transposed to channels-last here; the trainer's batches come
  // channels-last in backend memory (the loader writes them so) and are read in place.
  ImageInput input() const override {
    return {.host_layout = ImageInput::Layout::NCHW, .compute_layout = ImageInput::Layout::NHWC,
            .backend_images = true};
  }
  // images [B,3,S,S] in host memory, or [B,S,S,3] in backend memory (opts.in; kept until
  // backward) -> features [B,E]. opts.train: BatchNorm in train mode (the training step)
  // unless set_freeze_bn_stats.
  const float* forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) override;
  // d_feat [B,E]: gradient w.r.t. the normalized features of the last forward.
  void backward(const float* d_feat, ops::Prec prec) override;
  double mib() const override;
  double forward_macs() const override { return resnet_forward_macs(cfg_); }
  // Every gradient is complete only when backward returns (one bucket after it).
  void set_block_hook(std::function<void(int64_t)>) override {}

 private:
  // One conv -> BatchNorm [-> ReLU] with its saved activations (a, mean, rstd: planned for
  // training only) and, in inference, its BatchNorm folded into the conv (fw, fb).
  struct Unit {
    int64_t H = 0, W = 0, OH = 0, OW = 0, stride = 1, pad = 0;
    bool relu = true;
    float *a = nullptr, *y = nullptr, *mean = nullptr, *rstd = nullptr;  // conv out, bn(/relu) out, bn stats
    float *fw = nullptr, *fb = nullptr;  // folded weight [cout, cin, k, k] and bias [cout]
  };
  struct Block {
    Unit u1, u2, u3, ud;
    int64_t H = 0, W = 0;                             // input size; output H / stride
    float *x = nullptr, *p2 = nullptr, *q = nullptr;  // input, pooled u2 output, pooled input (stride > 1)
  };
  float* buf(size_t n);
  void plan_unit(Unit& u, const ConvBnParams& c, int64_t H, int64_t W, int64_t stride, bool relu, float* y = nullptr);
  ops::ConvShape conv_shape(const Unit& u, const ConvBnParams& c) const {
    return {B_, u.H, u.W, c.cin, c.cout, c.k, u.stride, u.pad};
  }
  void unit_forward(const Unit& u, const ConvBnParams& c, const float* x, ops::Prec prec);
  // Inference: conv with the folded weight and bias, `residual` (may be u.y) and the ReLU in
  // its epilogue (relu: u.relu, or the Bottleneck's final one).
  void unit_infer(const Unit& u, const ConvBnParams& c, const float* x, ops::Prec prec,
                  const float* residual = nullptr, bool relu = false) const;
  void block_infer(const Block& b, const BottleneckParams& p, ops::Prec prec);
  // f(unit, params) for every conv of the tower, stem first.
  template <class F>
  void each_unit(F f);
  // BatchNorm (eval mode) folded into each conv: w' = w * g / sqrt(var + eps) per output channel,
  // b' = beta - mean * g / sqrt(var + eps); handed to the backend's prepare_conv_weight.
  void fold();
  void prepare_pool_f32();
  void prepare_pool_bf16();
  // What an inference forward at `prec` reads and is not prepared yet: the folded convs, the
  // attention pool's projections in that precision.
  void prepare_inference(ops::Prec prec);
  // Releases all three (a new plan, written weights, the destructor).
  void release_prepared();
  // dy (mutable, the gradient of u.y) -> dx (assigned; skipped when null).
  void unit_backward(const Unit& u, const ConvBnParams& c, const ConvBnParams& g, float* dy, const float* x, float* dx,
                     ops::Prec prec);
  void block_forward(const Block& b, const BottleneckParams& p, ops::Prec prec);
  void block_backward(const Block& b, const BottleneckParams& p, const BottleneckParams& g, float* d_out, float* dx,
                      ops::Prec prec);
  void pool_forward(const AttnPoolParams& p, const float* feat, ops::Prec prec);
  void pool_forward_bf16(const AttnPoolParams& p, int64_t C, int64_t T);
  void pool_backward(const AttnPoolParams& p, const AttnPoolParams& g, float* d_feat, ops::Prec prec);

  ModelCfg cfg_;
  ops::Backend* be_;
  ResNetParams p_, g_;  // g_: bound when the model trains
  bool freeze_bn_stats_ = false;
  std::vector<BlockParams> no_blocks_;
  std::vector<ops::Buffer> bufs_;
  size_t floats_ = 0;
  int64_t B_max_ = 0, B_ = 0;
  bool training_ = false, train_bn_ = false;
  ops::Buffer folded_;  // every unit's fw and fb, while folded_valid_
  bool folded_valid_ = false, pool_f32_ = false;
  // Inference at bf16: the attention pool's projections as prepared bf16 copies (q16_ null
  // while not prepared), and the tokens in bf16.
  ops::Buffer pool16_;
  const bf16 *q16_ = nullptr, *k16_ = nullptr, *v16_ = nullptr, *c16_ = nullptr;
  bf16* tok16_ = nullptr;
  std::vector<float> nhwc_;  // the batch transposed to channels-last on the host
  float *img_ = nullptr, *stem_pool_ = nullptr;  // img_: host images uploaded channels-last
  const float* x0_ = nullptr;                      // the last forward's channels-last images
  Unit stem_[3];
  std::vector<Block> blocks_;
  // attention pool: tokens [B,T,C], the mean token's row [B,C] and its query [B,C], keys and
  // values [B,T,C], probabilities [B,H,1,T], the pooled row [B,C], features
  float *tok_, *tok0_, *q_, *k_, *v_, *att_, *pooled_, *feat_raw_, *feat_, *norm_;
  // gradients: two ping-pong map buffers and three scratch maps of the largest map size
  float *d_feat_raw_, *d_pooled_, *dq_, *dtok0_, *dk_, *dv_, *d_tok_, *att_scratch_;
  float *dA_, *dB_, *s1_, *s2_, *s3_;
  std::vector<int32_t> first_;  // B_max zeros: the mean token's row
};

}  // namespace oc
