// The seam between CLIP and its text tower, as image_tower.h is for the image side. One
// family is built, OpenCLIP's TextTransformer (text_transformer.h); its parameters are the
// text part of the model's table and ClipParams (params.h), bound by Clip and handed over
// with bind().
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "model/config.h"
#include "model/image_tower.h"
#include "model/params.h"

namespace oc {

class TextTower {
 public:
  virtual ~TextTower() = default;
  // The parameters and, when not null, their gradients (ClipParams bound into the model's
  // arenas; they must outlive the tower's use). Before forward().
  virtual void bind(const ClipParams& p, const ClipParams* g) = 0;
  virtual void plan(const TowerPlan& plan) = 0;
  // tokens [B, context_length] (host memory) -> features [B,E] (L2-normalized when normalize),
  // valid until the next forward. Token ids outside the vocabulary are an error naming the
  // row, position and id.
  virtual const float* forward(const int32_t* tokens, int64_t B, ops::Prec prec, bool normalize = true) = 0;
  // d_feat [B,E]: gradient w.r.t. the features of the last forward; parameter gradients accumulate.
  virtual void backward(const float* d_feat, ops::Prec prec) = 0;
  virtual double mib() const = 0;
  // f(l) when block l's parameter gradients are final in backward (data-parallel buckets).
  virtual void set_block_hook(std::function<void(int64_t)> f) = 0;
  virtual int64_t hooked_blocks() const = 0;
  // The blocks' bf16 copies (amp_bf16) and int8 weights (--precision int8); null: none.
  virtual void set_bf16_weights(const std::vector<BlockWeights16>* w16) = 0;
  virtual void set_int8_weights(const std::vector<BlockWeightsInt8>* w8) = 0;
  // Positions computed in the last forward.
  virtual int64_t tokens_used() const = 0;
  // Forces the full context (for tests comparing against a truncated computation).
  virtual void set_full_context(bool full) = 0;
};

// The model's text tower (allocates nothing until plan()); `be` must outlive it.
std::unique_ptr<TextTower> make_text_tower(const ModelCfg& cfg, ops::Backend& be);

}  // namespace oc
