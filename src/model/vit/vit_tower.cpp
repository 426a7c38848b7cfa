#include "model/vit/vit_tower.h"

#include "core/check.h"
#include "model/act_ranges.h"
#include "model/tower_util.h"
#include "ops/embed.h"
#include "ops/gemm_int8.h"
#include "ops/linear.h"
#include "ops/loss.h"

namespace oc {

VisionTower::VisionTower(const ModelCfg& cfg, ops::Backend& be) : cfg_(cfg), be_(&be) {
  mem_.set_backend(be);
}

StackDims VisionTower::stack_dims(int64_t B, ops::Prec prec) const {
  const auto& v = cfg_.vision;
  const StackShape s{.W = v.width,
                     .H = v.heads(),
                     .F = v.mlp_width(),
                     .L = v.layers,
                     .causal = false,
                     .act = cfg_.quick_gelu ? ops::Act::QuickGelu : ops::Act::Gelu,
                     .eps = v.ln_eps};
  return oc::stack_dims(B, T_, s, prec, mem_, w16_, w8_, be_);
}

void VisionTower::plan(const TowerPlan& plan) {
  const int64_t B = plan.B_max;
  B_max_ = B, training_ = plan.training;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, T = v.tokens(), Np = int64_t(v.grid()) * v.grid(), K = 3 * v.patch_size * v.patch_size,
                E = cfg_.embed_dim;
  mem_.set_label(fmt::format("{} vision tower, batch {}", cfg_.name, B));
  mem_.plan(B, T, W, v.heads(), v.mlp_width(), v.layers, plan.training, plan.checkpoint, plan.bf16_acts);
  const bool ln_every_token = v.avg_pool && !v.final_ln_after_pool;
  const size_t BT = size_t(B * T), BTW = size_t(B * T * W), BW = size_t(B * W), BE = size_t(B * E);
  extra_.bind(*be_, mem_.label() + " (pooling, projection, loss inputs)");
  const size_t image_floats = size_t(B * 3 * v.image_size * v.image_size);
  BufferPlan()
      .add(&images_, be_->host_memory() ? 0 : image_floats)  // the uploaded batch
      .add(&patches_, size_t(B * Np * K))                    // im2patches output
      .add(&patch_out_, size_t(B * Np * W))                  // conv1 as a linear layer
      .add(&x0_, BTW)                                        // class token + patches + positions
      .add(&pre_mean_, BT)
      .add(&pre_rstd_, BT)  // ln_pre statistics
      .add(&cls_in_, BW)    // the pooled token(s) before ln_post
      .add(&pooled_, BW)
      .add(&post_mean_, BT)
      .add(&post_rstd_, BT)  // ln_post statistics (every token with avg pooling)
      .add(&feat_raw_, BE)
      .add(&feat_, BE)
      .add(&norm_, size_t(B))
      .add(&d_feat_raw_, BE)
      .add(&d_pooled_, BW)
      .add(&d_cls_in_, BW)
      .add(&d_stack_out_, BTW)
      .add(&d_x0_, BTW)
      .add(&d_patch_out_, size_t(B * Np * W))
      .add(&x_drop_, plan.training && v.patch_dropout > 0 ? BTW : 0)  // the kept tokens (patch dropout)
      .add(&ln_all_, ln_every_token ? BTW : 0)                        // ln_post of every token
      .allocate(extra_);
  cls_index_.assign(size_t(B), 0);
}

// conv1 as a linear layer on the patches (int8 inference: an int8 GEMM, the patches quantized per row).
void VisionTower::patch_embed_forward(const VitParams& p, int64_t B, ops::Prec prec) {
  const auto& v = cfg_.vision;
  const int64_t W = v.width, Np = int64_t(v.grid()) * v.grid(), K = 3 * v.patch_size * v.patch_size;
  if (const ops::Int8Weight* conv8 = w8_all_ ? w8_all_->vision_patch() : nullptr) {
    ops::gemm_int8(*be_, {.M = B * Np, .lda = K, .W = conv8, .C = patch_out_, .ldc = W, .A32 = patches_});
    return;
  }
  observe_gemm_input(p.v_conv, patches_, B * Np * K);  // calibration only (model/act_ranges.h)
  be_->run(ops::LinearForwardArgs{.out = patch_out_,
                                  .inp = patches_,
                                  .weight = p.v_conv,
                                  .bias = nullptr,
                                  .M = B * Np,
                                  .K = K,
                                  .N = W,
                                  .prec = prec});
}

const float* VisionTower::forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) {
  OC_CHECK(B > 0 && B <= B_max_, "vision tower planned for batch <= {}, got {}", B_max_, B);
  B_ = B;
  drop_ = opts.train && training_ && cfg_.vision.patch_dropout > 0;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, Np = int64_t(v.grid()) * v.grid(), E = cfg_.embed_dim;
  images_to_patches(*be_, patches_, images_, images, opts.in == ImagesIn::Backend, B, v.image_size, v.patch_size);
  const VitParams& p = p_;
  patch_embed_forward(p, B, prec);
  be_->run(ops::VitEmbedForwardArgs{.x = x0_, .patch_out = patch_out_, .cls = p.v_cls, .pos = p.v_pos, .B = B,
                                    .Np = Np, .C = W});
  const float* emb = patch_dropout_forward(B);  // x0_, or the kept tokens (T_ of them)
  BlockActs a0 = mem_.layer(0, B, T_);
  ln_pre_forward(p, a0.x, emb, B);
  stack_forward(p.v_blocks, mem_, stack_dims(B, prec));
  pool_forward(p, B);  // ln_post and the class token or the patch mean -> pooled_
  be_->run(ops::ProjForwardArgs{.out = feat_raw_, .inp = pooled_, .w = p.v_proj, .M = B, .K = W, .N = E, .prec = prec});
  if (!opts.normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = E});
  return feat_;
}

void VisionTower::backward(const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_ && g_.v_conv, "vision tower was planned for inference; backward needs training activations");
  const int64_t B = B_;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, Np = int64_t(v.grid()) * v.grid(), P = v.patch_size, K = 3 * P * P, E = cfg_.embed_dim;
  const VitParams &p = p_, &g = g_;
  be_->run(ops::L2NormBackwardArgs{.dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B, .C = E});
  be_->run(ops::ProjBackwardArgs{.dinp = d_pooled_, .dw = g.v_proj, .dout = d_feat_raw_, .inp = pooled_, .w = p.v_proj,
                                 .M = B, .K = W, .N = E, .prec = prec});
  pool_backward(p, g, B);  // -> d_stack_out_
  StackDims d = stack_dims(B, prec);
  stack_backward(p.v_blocks, g.v_blocks, mem_, d_stack_out_, d);
  // d_stack_out_ is free again: with patch dropout it takes the kept tokens' gradient.
  ln_pre_backward(p, g, dropping() ? d_stack_out_ : d_x0_, B);
  patch_dropout_backward(B);  // d_stack_out_ -> d_x0_ (d_x0_ already holds it otherwise)
  be_->run(ops::VitEmbedBackwardArgs{.dpatch_out = d_patch_out_, .dcls = g.v_cls, .dpos = g.v_pos, .dx = d_x0_, .B = B,
                                     .Np = Np, .C = W});
  be_->run(ops::LinearBackwardArgs{.dinp = nullptr, .dweight = g.v_conv, .dbias = nullptr, .dout = d_patch_out_,
                                   .inp = patches_, .weight = p.v_conv, .M = B * Np, .K = K, .N = W, .prec = prec});
}

}  // namespace oc
