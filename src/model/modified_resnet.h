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

#include "model/config.h"
#include "model/params.h"
#include "ops/backend.h"

namespace oc {

class ResNetTower {
 public:
  void set_backend(ops::Backend& be) { be_ = &be; }  // before plan()
  // rn: the bound parameters (their channel counts shape the activations).
  void plan(const ModelCfg& cfg, const ResNetParams& rn, int64_t B_max, bool training);
  // images [B,3,S,S] (host memory, NCHW as the loaders write it) -> features [B,E]
  // (L2-normalized when normalize). train_bn: BatchNorm in train mode (the training step).
  const float* forward(const ClipParams& p, const float* images, int64_t B, ops::Prec prec, bool normalize,
                       bool train_bn);
  // d_feat [B,E]: gradient w.r.t. the normalized features of the last forward.
  void backward(const ClipParams& p, const ClipParams& g, const float* d_feat, ops::Prec prec);
  double mib() const;

 private:
  // One conv -> BatchNorm [-> ReLU] with its saved activations.
  struct Unit {
    int64_t H = 0, W = 0, OH = 0, OW = 0, stride = 1, pad = 0;
    bool relu = true;
    float *a = nullptr, *y = nullptr, *mean = nullptr, *rstd = nullptr;  // conv out, bn(/relu) out, bn stats
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
  // dy (mutable, the gradient of u.y) -> dx (assigned; skipped when null).
  void unit_backward(const Unit& u, const ConvBnParams& c, const ConvBnParams& g, float* dy, const float* x, float* dx,
                     ops::Prec prec);
  void block_forward(const Block& b, const BottleneckParams& p, ops::Prec prec);
  void block_backward(const Block& b, const BottleneckParams& p, const BottleneckParams& g, float* d_out, float* dx,
                      ops::Prec prec);
  void pool_forward(const AttnPoolParams& p, const float* feat, ops::Prec prec);
  void pool_backward(const AttnPoolParams& p, const AttnPoolParams& g, float* d_feat, ops::Prec prec);

  ModelCfg cfg_;
  ops::Backend* be_ = &ops::default_backend();
  std::vector<ops::Buffer> bufs_;
  size_t floats_ = 0;
  int64_t B_max_ = 0, B_ = 0;
  bool training_ = false, train_bn_ = false;
  std::vector<float> nhwc_;  // the batch transposed to channels-last on the host
  float *img_ = nullptr, *stem_pool_ = nullptr;
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
