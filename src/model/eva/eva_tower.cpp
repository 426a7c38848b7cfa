#include "model/eva/eva_tower.h"

#include "core/check.h"
#include "model/eva/config_eva.h"
#include "model/eva/rope_table.h"
#include "model/tower_util.h"
#include "ops/activation.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/loss.h"

namespace oc {

EvaTower::EvaTower(const ModelCfg& cfg, ops::Backend& be) : cfg_(cfg), be_(&be) {}

std::string EvaTower::int8_refusal() const {
  return fmt::format("has an EVA02 image tower ({}); the int8 path is built for OpenCLIP's ViT only",
                     cfg_.vision.timm_model_name);
}

std::string EvaTower::patch_dropout_refusal() const {
  return fmt::format(
      "has an EVA02 image tower ({}), whose patch dropout (timm's PatchDropout, with the rotary "
      "embedding gathered per kept patch) openclip-cpp does not implement",
      cfg_.vision.timm_model_name);
}

void EvaTower::check_unlocked_groups(int unlocked) const {
  if (unlocked > 0)
    OC_USER_ERROR(
        "--lock-image-unlocked-groups with the EVA02 image tower of {} is not implemented (OpenCLIP groups "
        "its parameters with timm's group_matcher); --lock-image alone locks the whole tower",
        cfg_.name);
}

EvaDims EvaTower::dims(int64_t B, ops::Prec prec) const {
  const auto& v = cfg_.vision;
  return {
      .B = B, .T = T_, .W = v.width, .H = v.heads(), .F = v.mlp_width(), .L = v.layers, .eps = v.ln_eps, .prec = prec};
}

void EvaTower::plan(const TowerPlan& plan) {
  // amp_bf16 (plan.bf16_acts): the EVA blocks keep fp32 activations and run their GEMMs and
  // attention on bf16-rounded operands (Prec::BF16 in forward/backward); no bf16 weight copies.
  const int64_t B = plan.B_max;
  B_max_ = B, training_ = plan.training;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, G = v.grid(), Np = G * G, K = 3 * v.patch_size * v.patch_size, E = cfg_.embed_dim;
  T_ = Np + 1;
  const std::string label = fmt::format("{} vision tower, batch {}", cfg_.name, B);
  stack_.plan(*be_, label, B, dims(B, ops::Prec::F32), plan.training, plan.checkpoint);
  const size_t BW = size_t(B * W), BE = size_t(B * E);
  extra_.bind(*be_, label + " (embedding, head)");
  BufferPlan bp;
  bp.add(&images_, be_->host_memory() ? 0 : size_t(B * 3 * v.image_size * v.image_size))
      .add(&patches_, size_t(B * Np * K))
      .add(&embed_, size_t(B * Np * W))
      .add(&sincos_, size_t(Np * 2 * v.head_width))
      .add(&cls_, BW)
      .add(&cls_ln_, BW)
      .add(&stats_, size_t(2 * B))
      .add(&feat_raw_, BE)
      .add(&feat_, BE)
      .add(&norm_, size_t(B));
  if (plan.training) bp.add(&d_feat_raw_, BE).add(&d_cls_ln_, BW).add(&d_cls_, BW).add(&d_stack_, size_t(B * T_ * W));
  bp.allocate(extra_);
  const std::vector<float> table = eva_rope_table(int(G), v.head_width, find_eva(v.timm_model_name)->rope_ref_grid);
  be_->copy_from_host(sincos_, table.data(), table.size() * sizeof(float));
}

// images -> patches -> [cls, patch_embed] + pos_embed -> blocks -> norm(cls) -> head.
const float* EvaTower::forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) {
  OC_CHECK(B > 0 && B <= B_max_, "vision tower planned for batch <= {}, got {}", B_max_, B);
  B_ = B;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, T = T_, Np = T - 1, P = v.patch_size, K = 3 * P * P, E = cfg_.embed_dim;
  images_to_patches(*be_, patches_, images_, images, opts.in == ImagesIn::Backend, B, v.image_size, P);
  be_->run(ops::LinearForwardArgs{.out = embed_,
                                  .inp = patches_,
                                  .weight = p_.conv_w,
                                  .bias = p_.conv_b,
                                  .M = B * Np,
                                  .K = K,
                                  .N = W,
                                  .prec = prec});
  float* x = stack_.in();
  const size_t row = sizeof(float) * size_t(W);
  for (int64_t b = 0; b < B; ++b) {
    be_->copy(x + b * T * W, p_.cls, row);
    be_->copy(x + (b * T + 1) * W, embed_ + b * Np * W, row * size_t(Np));
    be_->run(ops::AddInplaceArgs{.y = x + b * T * W, .x = p_.pos, .n = T * W});
  }
  stack_.forward(p_.blocks, sincos_, dims(B, prec));
  const float* out = stack_.out();
  for (int64_t b = 0; b < B; ++b) be_->copy(cls_ + b * W, out + b * T * W, row);
  be_->run(ops::LayerNormForwardArgs{.out = cls_ln_,
                                     .mean = stats_,
                                     .rstd = stats_ + B,
                                     .inp = cls_,
                                     .weight = p_.norm_w,
                                     .bias = p_.norm_b,
                                     .N = B,
                                     .C = W,
                                     .eps = v.ln_eps});
  be_->run(ops::LinearForwardArgs{
      .out = feat_raw_, .inp = cls_ln_, .weight = p_.head_w, .bias = p_.head_b, .M = B, .K = W, .N = E, .prec = prec});
  if (!opts.normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = E});
  return feat_;
}

void EvaTower::backward(const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_ && g_.conv_w, "vision tower was planned for inference; backward needs training activations");
  const auto& v = cfg_.vision;
  const int64_t B = B_, W = v.width, T = T_, E = cfg_.embed_dim;
  be_->run(ops::L2NormBackwardArgs{.dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B, .C = E});
  be_->run(ops::LinearBackwardArgs{.dinp = d_cls_ln_,
                                   .dweight = g_.head_w,
                                   .dbias = g_.head_b,
                                   .dout = d_feat_raw_,
                                   .inp = cls_ln_,
                                   .weight = p_.head_w,
                                   .M = B,
                                   .K = W,
                                   .N = E,
                                   .prec = prec});
  be_->zero(d_cls_, sizeof(float) * size_t(B * W));
  be_->run(ops::LayerNormBackwardArgs{.dinp = d_cls_,
                                      .dweight = g_.norm_w,
                                      .dbias = g_.norm_b,
                                      .dout = d_cls_ln_,
                                      .inp = cls_,
                                      .weight = p_.norm_w,
                                      .mean = stats_,
                                      .rstd = stats_ + B,
                                      .N = B,
                                      .C = W});
  be_->zero(d_stack_, sizeof(float) * size_t(B * T * W));
  for (int64_t b = 0; b < B; ++b) be_->copy(d_stack_ + b * T * W, d_cls_ + b * W, sizeof(float) * size_t(W));
  embed_backward(stack_.backward(p_.blocks, g_.blocks, sincos_, d_stack_, dims(B, prec)), prec);
}

// dx [B, T, W]: d (cls + pos) and d patch_embed.
void EvaTower::embed_backward(const float* dx, ops::Prec prec) {
  const auto& v = cfg_.vision;
  const int64_t B = B_, W = v.width, T = T_, Np = T - 1, K = 3 * v.patch_size * v.patch_size;
  for (int64_t b = 0; b < B; ++b) {
    be_->run(ops::AddInplaceArgs{.y = g_.pos, .x = dx + b * T * W, .n = T * W});
    be_->run(ops::AddInplaceArgs{.y = g_.cls, .x = dx + b * T * W, .n = W});
    be_->copy(embed_ + b * Np * W, dx + (b * T + 1) * W, sizeof(float) * size_t(Np * W));  // d patch_embed
  }
  be_->run(ops::LinearBackwardArgs{.dinp = nullptr,
                                   .dweight = g_.conv_w,
                                   .dbias = g_.conv_b,
                                   .dout = embed_,
                                   .inp = patches_,
                                   .weight = p_.conv_w,
                                   .M = B * Np,
                                   .K = K,
                                   .N = W,
                                   .prec = prec});
}

}  // namespace oc
