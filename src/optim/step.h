// One contrastive training step on a single process: zero grads, forward both towers,
// OpenCLIP's ClipLoss, backward. The optimizer step is separate (adamw.h), so the trainer
// can check gradients, clip, skip non-finite steps, and all-reduce in between.
#pragma once
#include <cstdint>

#include "core/buffer.h"
#include "model/clip.h"

namespace oc {

class ContrastiveStep {
 public:
  ContrastiveStep(Clip& model, int64_t B_max);
  // Returns the loss; parameter gradients are left in model.grads() (zeroed first).
  double forward_backward(const float* images, const int32_t* tokens, int64_t B);

 private:
  Clip& model_;
  int64_t B_max_;
  FloatBuffer d_img_, d_txt_, d_img_all_, d_txt_all_, scratch_;
};

}  // namespace oc
