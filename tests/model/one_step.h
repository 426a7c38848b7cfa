// One contrastive training step plus an AdamW update of the test-tiny model on a given
// backend (backend_step_test.cpp: cpu vs ref; cuda_step_test.cpp: cuda vs cpu), and the
// relative error the comparisons use.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "model/clip.h"
#include "model/config.h"
#include "ops/backend.h"
#include "optim/adamw.h"
#include "step/contrastive_step.h"

namespace oc {

struct StepOut {
  double loss;
  std::vector<float> grads, params;
  float logit_scale;
};

inline StepOut one_step(ops::Backend& be, Precision prec) {
  ModelCfg cfg = load_model_config("test-tiny");
  Clip m(cfg, be);
  m.init(7);
  m.set_precision(prec);
  const int64_t B = 3, S = cfg.vision.image_size, ctx = cfg.text.context_length;
  m.plan_training(B);
  Rng rng(11);
  std::vector<float> images(size_t(B * 3 * S * S));
  for (float& x : images) x = float(rng.normal());
  std::vector<int32_t> tokens(size_t(B * ctx), 0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = 3 + b * 2;
    for (int64_t t = 0; t < len; ++t) tokens[size_t(b * ctx + t)] = int32_t(1 + rng.below(100));
    tokens[size_t(b * ctx + len)] = int32_t(cfg.text.vocab_size - 1);  // end of text: the maximum id
  }
  ContrastiveStep step(m, B);
  StepOut o;
  o.loss = step.forward_backward(images.data(), tokens.data(), B);
  const size_t n = m.table().total;
  o.grads.resize(n), o.params.resize(n);
  be.copy_to_host(o.grads.data(), m.grads(), n * sizeof(float));
  AdamW opt(m.table(), AdamWCfg{}, be);
  opt.step(m.params(), m.grads(), 1e-3);
  clamp_logit_scale(be, m.params() + m.table().find("logit_scale")->offset);
  be.copy_to_host(o.params.data(), m.params(), n * sizeof(float));
  o.logit_scale = m.logit_scale();
  return o;
}

// max|x - ref| / max|ref| over a whole arena.
inline double rel_err(const std::vector<float>& x, const std::vector<float>& ref) {
  double e = 0, r = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e = std::max(e, double(std::abs(x[i] - ref[i])));
    r = std::max(r, double(std::abs(ref[i])));
  }
  return e / std::max(r, 1e-30);
}

}  // namespace oc
