// AdamW over the model's parameter arena with OpenCLIP's two groups: group 0 = no decay
// (ndim < 2, or the name has bn/ln/bias/logit_scale), group 1 = decay (--wd). After every
// step logit_scale is clamped to [0, ln 100], as OpenCLIP does in place.
#pragma once
#include <cstdint>
#include <vector>

#include "model/params.h"
#include "ops/backend.h"

namespace oc {

struct AdamWCfg {
  double lr = 5e-4;
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-6;  // OpenCLIP's ViT defaults
  double wd = 0.2;
};

// OpenCLIP: model names containing "vit" get betas (0.9, 0.98), eps 1e-6; others the
// CLIP paper's (0.9, 0.999), 1e-8.
AdamWCfg default_adamw(const std::string& model_name);

class AdamW {
 public:
  // Runs on `be`, the backend that owns the parameters (Clip::backend()).
  AdamW(const ParamTable& table, AdamWCfg cfg, ops::Backend& be = ops::default_backend());
  // One step with learning rate `lr` over every parameter whose `trainable` flag is set
  // (all when empty). Increments the step count first (torch semantics).
  void step(float* params, const float* grads, double lr, const std::vector<bool>& trainable = {});
  int64_t steps() const { return step_; }
  void set_steps(int64_t s) { step_ = s; }
  // The moments: memory of backend(), laid out as the parameter arena.
  float* exp_avg() { return m_.data(); }
  float* exp_avg_sq() { return v_.data(); }
  const float* exp_avg() const { return m_.data(); }
  const float* exp_avg_sq() const { return v_.data(); }
  const AdamWCfg& cfg() const { return cfg_; }
  ops::Backend& backend() const { return *be_; }
  double mib() const { return m_.mib() + v_.mib(); }

 private:
  const ParamTable* table_;
  ops::Backend* be_;
  AdamWCfg cfg_;
  ops::FloatArena m_, v_;
  int64_t step_ = 0;
};

// Clamp logit_scale (memory of `be`) to [0, ln 100] (call after each optimizer step).
void clamp_logit_scale(ops::Backend& be, float* logit_scale);

// Global L2 norm of all gradients, as torch.nn.utils.clip_grad_norm_; scales them down to
// max_norm when above it (max_norm <= 0: no clipping). Returns the norm before clipping.
double clip_grad_norm(ops::Backend& be, float* grads, const ParamTable& table, double max_norm);

}  // namespace oc
