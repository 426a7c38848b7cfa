#include "model/timm_vit/timm_vit_tower.h"

#include <algorithm>

#include "core/check.h"
#include "model/timm_vit/config_timm.h"
#include "model/tower_util.h"
#include "ops/activation.h"
#include "ops/embed.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/loss.h"

namespace oc {

TimmVitTower::TimmVitTower(const ModelCfg& cfg, ops::Backend& be) : cfg_(cfg), be_(&be) {
  mem_.set_backend(be);
  const TimmVitSpec* s = find_timm_vit(cfg.vision.timm_model_name);
  OC_CHECK(s, "timm tower {} is not in the table of config_timm.cpp", cfg.vision.timm_model_name);
  act_ = s->gelu_tanh ? ops::Act::GeluTanh : ops::Act::Gelu;
}

std::string TimmVitTower::int8_refusal() const {
  return fmt::format("has a timm image tower ({}); the int8 path is built for OpenCLIP's ViT only",
                     cfg_.vision.timm_model_name);
}

std::string TimmVitTower::patch_dropout_refusal() const {
  return fmt::format("has a timm image tower ({}), whose patch dropout (timm's PatchDropout) openclip-cpp does not "
                     "implement; only OpenCLIP's own ViT takes it",
                     cfg_.vision.timm_model_name);
}

void TimmVitTower::check_unlocked_groups(int unlocked) const {
  if (unlocked > 0)
    OC_USER_ERROR("--lock-image-unlocked-groups with the timm image tower of {} is not implemented (OpenCLIP groups "
                  "its parameters with timm's group_matcher); --lock-image alone locks the whole tower",
                  cfg_.name);
}

// timm's blocks use the timm model's act_layer (nn.GELU, or GELU tanh for the SigLIP2 towers)
// whatever OpenCLIP's quick_gelu says (it reaches only its own towers).
StackDims TimmVitTower::stack_dims(int64_t B, ops::Prec prec) const {
  const auto& v = cfg_.vision;
  const StackShape s{
      .W = v.width, .H = v.heads(), .F = v.mlp_width(), .L = v.layers, .causal = false, .act = act_, .eps = v.ln_eps};
  return oc::stack_dims(B, T_, s, prec, mem_, w16_, nullptr, be_);
}

void TimmVitTower::plan(const TowerPlan& plan) {
  const int64_t B = plan.B_max;
  B_max_ = B, training_ = plan.training;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, T = v.tokens(), K = 3 * v.patch_size * v.patch_size, E = cfg_.embed_dim;
  mem_.set_label(fmt::format("{} vision tower, batch {}", cfg_.name, B));
  mem_.plan(B, T, W, v.heads(), v.mlp_width(), v.layers, plan.training, plan.checkpoint, plan.bf16_acts);
  const size_t BT = size_t(B * T), BTW = size_t(B * T * W), BE = size_t(B * E);
  extra_.bind(*be_, mem_.label() + " (pooling, projection, loss inputs)");
  BufferPlan()
      .add(&images_, be_->host_memory() ? 0 : size_t(B * 3 * v.image_size * v.image_size))  // the uploaded batch
      .add(&patches_, size_t(B * T * K))                                                     // im2patches output
      .add(&post_mean_, BT)
      .add(&post_rstd_, BT)  // trunk.norm statistics
      .add(&ln_all_, BTW)    // trunk.norm of every token
      .add(&feat_raw_, BE)
      .add(&feat_, BE)
      .add(&norm_, size_t(B))
      .add(&d_feat_raw_, BE)
      .add(&d_ln_, BTW)
      .add(&d_stack_out_, BTW)
      .allocate(extra_);
  map_.plan(*be_, mem_.label(), B, T, W, v.heads(), v.mlp_width(), v.ln_eps, act_, plan.training);
}

ImageInput TimmVitTower::input() const {
  const auto& v = cfg_.vision;
  return {.backend_images = int64_t(v.grid()) * v.patch_size == v.image_size};
}

const float* TimmVitTower::crop_to_grid(const float* images, int64_t B) {
  const int64_t S = cfg_.vision.image_size, C = int64_t(cfg_.vision.grid()) * cfg_.vision.patch_size;
  crop_.resize(size_t(B * 3 * C * C));
  for (int64_t bc = 0; bc < B * 3; ++bc)
    for (int64_t y = 0; y < C; ++y)
      std::copy(images + (bc * S + y) * S, images + (bc * S + y) * S + C, crop_.data() + (bc * C + y) * C);
  return crop_.data();
}

// images -> patches -> patch_embed + pos_embed -> blocks -> trunk.norm -> MAP head -> feat_raw_ [B,W].
const float* TimmVitTower::forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) {
  OC_CHECK(B > 0 && B <= B_max_, "vision tower planned for batch <= {}, got {}", B_max_, B);
  B_ = B;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, Np = v.tokens(), P = v.patch_size, K = 3 * P * P, E = cfg_.embed_dim;
  const int64_t S = v.grid() * P;  // below image_size where the conv drops a remainder
  OC_CHECK(opts.in == ImagesIn::Host || S == v.image_size,
           "images in backend memory for a tower that crops them to its grid ({} of {} pixels) on the host", S,
           v.image_size);
  const float* img = S == v.image_size ? images : crop_to_grid(images, B);
  images_to_patches(*be_, patches_, images_, img, opts.in == ImagesIn::Backend, B, S, P);
  T_ = Np;
  BlockActs a0 = mem_.layer(0, B, Np);
  // patch_embed: the stride-P conv as a linear layer on the patches, with its bias.
  be_->run(ops::LinearForwardArgs{.out = a0.x, .inp = patches_, .weight = p_.conv_w, .bias = p_.conv_b, .M = B * Np,
                                  .K = K, .N = W, .prec = prec});
  for (int64_t b = 0; b < B; ++b) be_->run(ops::AddInplaceArgs{.y = a0.x + b * Np * W, .x = p_.pos, .n = Np * W});
  stack_forward(p_.blocks, mem_, stack_dims(B, prec));
  be_->run(ops::LayerNormForwardArgs{.out = ln_all_, .mean = post_mean_, .rstd = post_rstd_, .inp = mem_.out(B, Np),
                                     .weight = p_.norm_w, .bias = p_.norm_b, .N = B * Np, .C = W,
                                     .eps = v.ln_eps});  // trunk.norm on every token
  map_.forward(p_.map, ln_all_, feat_raw_, B, prec);
  if (!opts.normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = E});
  return feat_;
}

// d_feat [B,W] -> parameter gradients.
void TimmVitTower::backward(const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_ && g_.conv_w, "vision tower was planned for inference; backward needs training activations");
  const auto& v = cfg_.vision;
  const int64_t B = B_, W = v.width, Np = v.tokens(), K = 3 * v.patch_size * v.patch_size, N = B * Np,
                E = cfg_.embed_dim;
  be_->run(ops::L2NormBackwardArgs{.dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B, .C = E});
  map_.backward(p_.map, g_.map, d_feat_raw_, d_ln_, B, prec);
  be_->zero(d_stack_out_, sizeof(float) * size_t(N * W));
  be_->run(ops::LayerNormBackwardArgs{.dinp = d_stack_out_, .dweight = g_.norm_w, .dbias = g_.norm_b, .dout = d_ln_,
                                      .inp = mem_.out(B, Np), .weight = p_.norm_w, .mean = post_mean_,
                                      .rstd = post_rstd_, .N = N, .C = W});
  stack_backward(p_.blocks, g_.blocks, mem_, d_stack_out_, stack_dims(B, prec));
  const float* dx = mem_.d_res();  // d (patch_embed + pos_embed)
  for (int64_t b = 0; b < B; ++b) be_->run(ops::AddInplaceArgs{.y = g_.pos, .x = dx + b * Np * W, .n = Np * W});
  be_->run(ops::LinearBackwardArgs{.dinp = nullptr, .dweight = g_.conv_w, .dbias = g_.conv_b, .dout = dx,
                                   .inp = patches_, .weight = p_.conv_w, .M = N, .K = K, .N = W, .prec = prec});
}

}  // namespace oc
