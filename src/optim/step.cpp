#include "optim/step.h"

#include <cmath>

#include "core/check.h"
#include "core/profile.h"
#include "ops/activation.h"
#include "ops/loss.h"

namespace oc {

ContrastiveStep::ContrastiveStep(Clip& model, int64_t B_max) : model_(model), B_max_(B_max) {
  const size_t BE = size_t(B_max * model.cfg().embed_dim);
  d_img_.resize(BE), d_txt_.resize(BE), d_img_all_.resize(BE), d_txt_all_.resize(BE);
  scratch_.resize(size_t(2 * B_max * B_max));
}

double ContrastiveStep::forward_backward(const float* images, const int32_t* tokens, int64_t B) {
  OC_CHECK(B <= B_max_, "batch {} exceeds the planned {}", B, B_max_);
  const int64_t E = model_.cfg().embed_dim;
  model_.zero_grads();
  Clip::Features f;
  {
    OC_PROFILE("step.forward");
    f = model_.forward(images, tokens, B);
  }
  OC_PROFILE("step.loss+backward");
  const float scale = std::exp(model_.logit_scale());
  float d_scale = 0;
  const double loss = ops::clip_loss_forward_backward(d_img_.data(), d_txt_.data(), d_img_all_.data(),
                                                      d_txt_all_.data(), &d_scale, scratch_.data(), f.image, f.text,
                                                      f.image, f.text, scale, B, B, E, 0);
  // Single process: the gathered columns are the local features themselves.
  ops::add_inplace(d_img_.data(), d_img_all_.data(), B * E);
  ops::add_inplace(d_txt_.data(), d_txt_all_.data(), B * E);
  model_.g().logit_scale[0] += d_scale;
  model_.backward(d_img_.data(), d_txt_.data());
  return loss;
}

}  // namespace oc
