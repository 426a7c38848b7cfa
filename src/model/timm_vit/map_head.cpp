// timm's AttentionPoolLatent (map_head.h).
#include "model/timm_vit/map_head.h"

#include <algorithm>
#include <vector>

#include "core/check.h"
#include "core/checked.h"
#include "ops/activation.h"
#include "ops/cross_attention.h"
#include "ops/layernorm.h"
#include "ops/linear.h"

namespace oc {

void MapHead::plan(ops::Backend& be, const std::string& label, int64_t B, int64_t T, int64_t W, int64_t H, int64_t F,
                   double eps, ops::Act act, bool training) {
  be_ = &be, B_max_ = B, T_ = T, W_ = W, H_ = H, F_ = F, eps_ = eps, act_ = act;
  const std::string what = label + " MAP head";
  const int64_t BW = checked_mul(what, {B, W}), BTW = checked_mul(what, {B, T, W}), BF = checked_mul(what, {B, F}),
                att = checked_mul(what, {B, H, T});
  std::vector<std::pair<float**, int64_t>> slots = {{&lat_, BW}, {&q_, BW},    {&kv_, 2 * BTW}, {&att_, att},
                                                    {&ao_, BW},  {&y_, BW},    {&n_, BW},       {&mean_, B},
                                                    {&rstd_, B}, {&h_, BF},    {&g_, BF}};
  if (training)  // the backward buffers
    slots.insert(slots.end(), {{&d_lat_, BW}, {&dq_, BW}, {&dkv_, 2 * BTW}, {&scratch_, att}, {&dao_, BW},
                               {&dy_, BW}, {&dn_, BW}, {&dh_, BF}});
  int64_t total = 0;
  for (const auto& s : slots) total = checked_add(what, {total, (s.second + 15) / 16 * 16});
  buf_.bind(be, what);
  buf_.resize(size_t(total), false);
  float* p = buf_.data();
  for (const auto& s : slots) *s.first = p, p += (s.second + 15) / 16 * 16;
}

void MapHead::forward(const MapHeadParams& p, const float* x, float* out, int64_t B, ops::Prec prec) {
  OC_CHECK(B > 0 && B <= B_max_, "MAP head planned for batch <= {}, got {}", B_max_, B);
  const int64_t T = T_, W = W_, F = F_;
  x_ = x;
  for (int64_t b = 0; b < B; ++b) be_->copy(lat_ + b * W, p.latent, sizeof(float) * size_t(W));  // latent.expand(B)
  be_->run(ops::LinearForwardArgs{.out = q_, .inp = lat_, .weight = p.q_w, .bias = p.q_b, .M = B, .K = W, .N = W,
                                  .prec = prec});
  be_->run(ops::LinearForwardArgs{.out = kv_, .inp = x, .weight = p.kv_w, .bias = p.kv_b, .M = B * T, .K = W,
                                  .N = 2 * W, .prec = prec});
  be_->run(ops::CrossAttentionForwardArgs{.out = ao_, .att = att_, .q = q_, .k = kv_, .v = kv_ + W, .ldq = W,
                                          .ldk = 2 * W, .ldv = 2 * W, .B = B, .Tq = 1, .Tk = T, .C = W, .H = H_,
                                          .prec = prec});
  be_->run(ops::LinearForwardArgs{.out = y_, .inp = ao_, .weight = p.proj_w, .bias = p.proj_b, .M = B, .K = W, .N = W,
                                  .prec = prec});
  be_->run(ops::LayerNormForwardArgs{.out = n_, .mean = mean_, .rstd = rstd_, .inp = y_, .weight = p.ln_w,
                                     .bias = p.ln_b, .N = B, .C = W, .eps = eps_});
  be_->run(ops::LinearForwardArgs{.out = h_, .inp = n_, .weight = p.fc1_w, .bias = p.fc1_b, .M = B, .K = W, .N = F,
                                  .prec = prec});
  be_->run(ops::ActForwardArgs{.out = g_, .inp = h_, .n = B * F, .act = act_});
  be_->run(ops::LinearForwardArgs{.out = out, .inp = g_, .weight = p.fc2_w, .bias = p.fc2_b, .M = B, .K = F, .N = W,
                                  .prec = prec});
  be_->run(ops::AddInplaceArgs{.y = out, .x = y_, .n = B * W});  // x + mlp(norm(x))
}

void MapHead::backward(const MapHeadParams& p, const MapHeadParams& g, const float* d_out, float* dx, int64_t B,
                       ops::Prec prec) {
  OC_CHECK(d_lat_, "MAP head was planned for inference; backward needs training buffers");
  mlp_backward(p, g, d_out, B, prec);  // -> dy_
  attention_backward(p, g, dx, B, prec);
}

// out = y + fc2(gelu(fc1(norm(y)))): dy_ = d_out + the MLP branch's gradient.
void MapHead::mlp_backward(const MapHeadParams& p, const MapHeadParams& g, const float* d_out, int64_t B,
                           ops::Prec prec) {
  const int64_t W = W_, F = F_;
  be_->copy(dy_, d_out, sizeof(float) * size_t(B * W));
  be_->run(ops::LinearBackwardArgs{.dinp = dh_, .dweight = g.fc2_w, .dbias = g.fc2_b, .dout = d_out, .inp = g_,
                                   .weight = p.fc2_w, .M = B, .K = F, .N = W, .prec = prec});  // dh_ = d gelu(h)
  be_->run(ops::ActBackwardArgs{.dinp = dh_, .dout = dh_, .inp = h_, .n = B * F, .act = act_});
  be_->run(ops::LinearBackwardArgs{.dinp = dn_, .dweight = g.fc1_w, .dbias = g.fc1_b, .dout = dh_, .inp = n_,
                                   .weight = p.fc1_w, .M = B, .K = W, .N = F, .prec = prec});
  be_->run(ops::LayerNormBackwardArgs{.dinp = dy_, .dweight = g.ln_w, .dbias = g.ln_b, .dout = dn_, .inp = y_,
                                      .weight = p.ln_w, .mean = mean_, .rstd = rstd_, .N = B, .C = W});
}

// y = proj(attention(q(latent), kv(x))): dy_ -> dx, the latent's gradient summed over the batch.
void MapHead::attention_backward(const MapHeadParams& p, const MapHeadParams& g, float* dx, int64_t B, ops::Prec prec) {
  const int64_t T = T_, W = W_;
  be_->run(ops::LinearBackwardArgs{.dinp = dao_, .dweight = g.proj_w, .dbias = g.proj_b, .dout = dy_, .inp = ao_,
                                   .weight = p.proj_w, .M = B, .K = W, .N = W, .prec = prec});
  be_->run(ops::CrossAttentionBackwardArgs{.dq = dq_, .dk = dkv_, .dv = dkv_ + W, .scratch = scratch_, .dout = dao_,
                                           .q = q_, .k = kv_, .v = kv_ + W, .att = att_, .ldq = W, .ldk = 2 * W,
                                           .ldv = 2 * W, .B = B, .Tq = 1, .Tk = T, .C = W, .H = H_, .prec = prec});
  be_->run(ops::LinearBackwardArgs{.dinp = dx, .dweight = g.kv_w, .dbias = g.kv_b, .dout = dkv_, .inp = x_,
                                   .weight = p.kv_w, .M = B * T, .K = W, .N = 2 * W, .prec = prec});
  be_->run(ops::LinearBackwardArgs{.dinp = d_lat_, .dweight = g.q_w, .dbias = g.q_b, .dout = dq_, .inp = lat_,
                                   .weight = p.q_w, .M = B, .K = W, .N = W, .prec = prec});
  for (int64_t b = 0; b < B; ++b) be_->run(ops::AddInplaceArgs{.y = g.latent, .x = d_lat_ + b * W, .n = W});
}

}  // namespace oc
