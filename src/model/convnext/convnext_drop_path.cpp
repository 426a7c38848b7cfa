// Stochastic depth of the timm ConvNeXt tower (timm_drop_path): timm 0.9's ConvNeXt builds
// dp_rates = torch.linspace(0, drop_path_rate, sum(depths)) and gives block k
// DropPath(dp_rates[k]) (nn.Identity at 0); DropPath multiplies the branch by
// bernoulli(keep).div_(keep) per sample in train mode. The mask is drawn on the host, once per
// training forward for every block, and applied on the backend as one scale per sample (each
// sample's map is contiguous: channels-last).
#include <algorithm>

#include "core/check.h"
#include "core/rng.h"
#include "model/convnext/convnext_tower.h"
#include "ops/adamw.h"

namespace oc {

std::vector<double> ConvNextTower::drop_rates(double rate, int n) {
  // torch.linspace's CPU kernel in float32: step = (end - start) / (n - 1); the first half
  // start + step * i, the second half end - step * (n - 1 - i). tolist() widens each to double.
  std::vector<double> r(size_t(std::max(n, 0)), 0.0);
  if (n == 1) r[0] = double(float(rate));
  if (n < 2) return r;
  const float start = 0.0f, end = float(rate), step = (end - start) / float(n - 1);
  const int halfway = n / 2;
  for (int i = 0; i < n; ++i)
    r[size_t(i)] = double(i < halfway ? start + step * float(i) : end - step * float(n - 1 - i));
  return r;
}

void ConvNextTower::draw_drop_scales(uint64_t seed, uint64_t call, int k, double keep, int64_t B, float* scale) {
  Rng rng(mix_seed(seed, call, uint64_t(k)));
  const float kept = 1.0f / float(keep);  // torch: random_tensor.div_(keep_prob), in float32
  for (int64_t b = 0; b < B; ++b) scale[b] = rng.uniform() < keep ? kept : 0.0f;
}

int ConvNextTower::first_block(int stage) const {
  int k = 0;
  for (int s = 0; s < stage; ++s) k += depth(size_t(s));
  return k;
}

void ConvNextTower::draw_drop_path(bool train) {
  drop_scale_.clear();
  if (!train || !training_ || cfg_.vision.drop_path <= 0) return;
  const int n = first_block(4);
  drop_scale_.assign(size_t(n) * size_t(B_), 1.0f);
  for (int k = 0; k < n; ++k) {
    const double p = drop_prob_[size_t(k)];
    if (p <= 0) continue;  // timm: nn.Identity
    float* s = drop_scale_.data() + size_t(k) * size_t(B_);
    if (drop_draw_) drop_draw_(k, 1.0 - p, B_, s);
    else draw_drop_scales(drop_seed_, drop_calls_, k, 1.0 - p, B_, s);
  }
  ++drop_calls_;
}

void ConvNextTower::drop_path(float* x, int k, int64_t n) {
  if (drop_scale_.empty() || drop_prob_[size_t(k)] <= 0) return;
  const float* s = drop_scale_.data() + size_t(k) * size_t(B_);
  for (int64_t b = 0; b < B_; ++b)
    if (s[b] != 1.0f) be_->run(ops::ScaleInplaceArgs{.x = x + b * n, .n = n, .s = s[b]});
}

}  // namespace oc
