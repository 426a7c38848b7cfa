#include "optim/adamw.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>


namespace oc {

AdamWCfg default_adamw(const std::string& model_name) {
  std::string lower = model_name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  AdamWCfg c;
  if (lower.find("vit") == std::string::npos) c.beta2 = 0.999, c.eps = 1e-8;
  return c;
}

AdamW::AdamW(const ParamTable& table, AdamWCfg cfg, ops::Backend& be) : table_(&table), be_(&be), cfg_(cfg) {
  m_.bind(be, fmt::format("AdamW exp_avg ({} parameters)", table.total));
  v_.bind(be, fmt::format("AdamW exp_avg_sq ({} parameters)", table.total));
  m_.resize(table.total, true);
  v_.resize(table.total, true);
}

void AdamW::step(float* params, const float* grads, double lr, const std::vector<bool>& trainable) {
  ++step_;
  const auto& ps = table_->params;
  std::vector<ops::AdamWSpan> spans;
  spans.reserve(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    if (!trainable.empty() && !trainable[i]) continue;
    const ParamInfo& p = ps[i];
    spans.push_back({int64_t(p.offset), int64_t(p.numel), p.decay ? float(cfg_.wd) : 0.0f});
  }
  be_->run(ops::AdamWStepSpansArgs{.p = params, .g = grads, .m = m_.data(), .v = v_.data(), .spans = spans,
                                   .lr = float(lr), .beta1 = float(cfg_.beta1), .beta2 = float(cfg_.beta2),
                                   .eps = float(cfg_.eps), .step = step_});
}

void clamp_logit_scale(ops::Backend& be, float* s) {
  be.write_scalar(s, std::clamp(be.read_scalar(s), 0.0f, float(std::log(100.0))));
}

double clip_grad_norm(ops::Backend& be, float* grads, const ParamTable& table, double max_norm) {
  double sq = 0;
  for (auto& p : table.params) sq += be.run(ops::SumSquaresArgs{.x = grads + p.offset, .n = int64_t(p.numel)});
  const double norm = std::sqrt(sq);
  if (max_norm > 0 && norm > max_norm) {
    // torch: clip_coef = max_norm / (total_norm + 1e-6), applied when < 1.
    const float coef = float(max_norm / (norm + 1e-6));
    for (auto& p : table.params) be.run(ops::ScaleInplaceArgs{.x = grads + p.offset, .n = int64_t(p.numel), .s = coef});
  }
  return norm;
}

}  // namespace oc
