#include "model/convnext/convnext_tower.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "core/profile.h"
#include "model/config_limits.h"
#include "model/convnext/config_convnext.h"
#include "model/tower_util.h"
#include "ops/activation.h"
#include "ops/conv.h"
#include "ops/dwconv.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/tokens.h"

namespace oc {
namespace {
constexpr int64_t kDwK = 7, kDwPad = 3;  // conv_dw: 7x7, "same" padding
constexpr int64_t kStem = 4;             // the stem's patch

const ConvNextSpec& spec_of(const ModelCfg& cfg) {
  const ConvNextSpec* s = find_convnext(cfg.vision.timm_model_name);
  OC_CHECK(s, "model {}: {} is not a timm ConvNeXt", cfg.name, cfg.vision.timm_model_name);
  return *s;
}
}  // namespace

ConvNextTower::ConvNextTower(const ModelCfg& cfg, ops::Backend& be) : cfg_(cfg), be_(&be), spec_(spec_of(cfg)) {}

void ConvNextTower::check_config(const std::string& where) const { check_convnext(cfg_.vision, where); }

void ConvNextTower::check_unlocked_groups(int unlocked) const {
  if (unlocked > 0)
    OC_USER_ERROR(
        "--lock-image-unlocked-groups with the timm image tower of {} is not implemented (OpenCLIP groups "
        "its parameters with timm's group_matcher); --lock-image alone locks the whole tower",
        cfg_.name);
}

std::string ConvNextTower::int8_refusal() const {
  return fmt::format("has a timm ConvNeXt image tower ({}); the int8 path is built for OpenCLIP's ViT only",
                     cfg_.vision.timm_model_name);
}

std::string ConvNextTower::patch_dropout_refusal() const {
  return fmt::format("has a timm ConvNeXt image tower ({}), which has no patch dropout", cfg_.vision.timm_model_name);
}

// ---- LayerNorm: timm's LayerNorm and LayerNorm2d, over each channels-last row ----
void ConvNextTower::ln_forward(float* out, float* mean, float* rstd, const float* x, const float* w, const float* b,
                               int64_t N, int64_t C) {
  be_->run(ops::LayerNormForwardArgs{.out = out,
                                     .mean = mean,
                                     .rstd = rstd,
                                     .inp = x,
                                     .weight = w,
                                     .bias = b,
                                     .N = N,
                                     .C = C,
                                     .eps = cfg_.vision.ln_eps});
}

void ConvNextTower::ln_backward(float* dx, float* dw, float* db, const float* dy, const float* x, const float* w,
                                const float* mean, const float* rstd, int64_t N, int64_t C) {
  be_->zero(dx, size_t(N * C) * sizeof(float));  // the op accumulates
  be_->run(ops::LayerNormBackwardArgs{.dinp = dx,
                                      .dweight = dw,
                                      .dbias = db,
                                      .dout = dy,
                                      .inp = x,
                                      .weight = w,
                                      .mean = mean,
                                      .rstd = rstd,
                                      .N = N,
                                      .C = C});
}

// ---- plan ----------------------------------------------------------------------------
void ConvNextTower::plan_stages(BufferPlan& bp) {
  const VisionCfg& v = cfg_.vision;
  const size_t B = size_t(B_max_);
  int64_t H = v.image_size / kStem;
  for (int s = 0; s < 4; ++s) {
    StageActs& st = st_[s];
    if (s > 0) H /= 2;
    st.H = H, st.C = dim(size_t(s));
    st.blocks.assign(size_t(depth(size_t(s))), BlockActs{});
    const size_t R = B * size_t(H * H), RC = R * size_t(st.C);
    if (s > 0) {
      const size_t Rp = R * 4, Cp = size_t(st_[s - 1].C);
      bp.add(&st.ds_ln, Rp * Cp).add(&st.ds_mean, Rp).add(&st.ds_rstd, Rp).add(&st.ds_out, RC);
    }
    // Inference: block 0's buffers serve every block; the outputs alternate between two.
    for (size_t b = 0; b < st.blocks.size(); ++b) {
      BlockActs& a = st.blocks[b];
      if (training_ || b == 0)
        bp.add(&a.y1, RC)
            .add(&a.mean, R)
            .add(&a.rstd, R)
            .add(&a.y2, RC)
            .add(&a.h, 4 * RC)
            .add(&a.a, 4 * RC)
            .add(&a.z, RC);
      if (training_ || b < 2) bp.add(&a.out, RC);
    }
  }
}

void ConvNextTower::plan_head(BufferPlan& bp) {
  const size_t B = size_t(B_max_), C3 = size_t(dim(3)), E = size_t(cfg_.embed_dim);
  const size_t hidden = cfg_.vision.head_mlp ? 2 * E : 0;
  bp.add(&pooled_, B * C3).add(&head_mean_, B).add(&head_rstd_, B).add(&head_ln_, B * C3);
  bp.add(&head_h_, B * hidden).add(&head_a_, B * hidden).add(&feat_raw_, B * E).add(&feat_, B * E).add(&norm_, B);
  if (!training_) return;
  const size_t big = B * size_t(st_[0].H * st_[0].H * st_[0].C);  // the largest map: stage 0's
  bp.add(&d_feat_raw_, B * E).add(&d_head_ln_, B * C3).add(&d_pooled_, B * C3).add(&d_head_a_, B * hidden);
  bp.add(&dA_, big).add(&dB_, big).add(&s1_, big).add(&s2_, big).add(&sF_, 4 * big);
}

void ConvNextTower::plan(const TowerPlan& plan) {
  const VisionCfg& v = cfg_.vision;
  drop_prob_ = drop_rates(v.drop_path, first_block(4));
  drop_scale_.clear();
  OC_CHECK(p_.stem_w, "ConvNeXt tower planned before its parameters were bound");
  B_max_ = plan.B_max, training_ = plan.training;
  const size_t B = size_t(B_max_), S = size_t(v.image_size), G = S / kStem;
  arena_.bind(*be_, fmt::format("{} ConvNeXt tower, batch {}", cfg_.name, B));
  BufferPlan bp;
  bp.add(&images_, be_->host_memory() ? 0 : B * 3 * S * S)  // the uploaded batch (device backends)
      .add(&patches_, B * G * G * 3 * kStem * kStem)
      .add(&stem_conv_, B * G * G * size_t(dim(0)))
      .add(&stem_mean_, B * G * G)
      .add(&stem_rstd_, B * G * G)
      .add(&stem_out_, B * G * G * size_t(dim(0)));
  plan_stages(bp);
  plan_head(bp);
  bp.allocate(arena_);
  if (training_) return;
  for (StageActs& st : st_)
    for (size_t b = 1; b < st.blocks.size(); ++b) {
      float* out = b % 2 ? st.blocks[1].out : st.blocks[0].out;
      st.blocks[b] = st.blocks[0];
      st.blocks[b].out = out;
    }
}

// ---- forward -------------------------------------------------------------------------
void ConvNextTower::block_forward(const StageActs& s, const BlockActs& a, const ConvNextBlockParams& p, int k,
                                  ops::Prec prec) {
  const int64_t R = rows(s), C = s.C;
  // Profile scopes (core/profile.h: `openclip bench` only; OPENCLIP_PROFILE_SYNC=1 waits per scope).
  {
    OC_PROFILE("dwconv");
    be_->run(ops::DwConv2dForwardArgs{.out = a.y1,
                                      .inp = a.x,
                                      .weight = p.dw_w,
                                      .bias = p.dw_b,
                                      .shape = {B_, s.H, s.H, C, kDwK, kDwPad},
                                      .prec = prec});
  }
  {
    OC_PROFILE("layernorm");
    ln_forward(a.y2, a.mean, a.rstd, a.y1, p.ln_w, p.ln_b, R, C);
  }
  {
    OC_PROFILE("linear");
    be_->run(ops::LinearForwardArgs{
        .out = a.h, .inp = a.y2, .weight = p.fc1_w, .bias = p.fc1_b, .M = R, .K = C, .N = 4 * C, .prec = prec});
  }
  {
    OC_PROFILE("gelu");
    be_->run(ops::ActForwardArgs{.out = a.a, .inp = a.h, .n = R * 4 * C, .act = ops::Act::Gelu});
  }
  {
    OC_PROFILE("linear");
    be_->run(ops::LinearForwardArgs{
        .out = a.z, .inp = a.a, .weight = p.fc2_w, .bias = p.fc2_b, .M = R, .K = 4 * C, .N = C, .prec = prec});
  }
  OC_PROFILE("layerscale_residual");
  be_->copy(a.out, a.z, size_t(R * C) * sizeof(float));
  be_->run(ops::LayerScaleForwardArgs{.x = a.out, .gamma = p.gamma, .N = R, .C = C});
  drop_path(a.out, k, R / B_ * C);
  be_->run(ops::AddInplaceArgs{.y = a.out, .x = a.x, .n = R * C});
}

// x: stage i's input map (the stem's output, or stage i-1's last block output).
void ConvNextTower::stage_forward(int i, const float* x, ops::Prec prec) {
  StageActs& s = st_[i];
  const ConvNextStageParams& p = p_.stages[i];
  if (i > 0) {
    const StageActs& prev = st_[i - 1];
    const int64_t Rp = rows(prev), Cp = prev.C;
    ln_forward(s.ds_ln, s.ds_mean, s.ds_rstd, x, p.ds_ln_w, p.ds_ln_b, Rp, Cp);
    be_->run(ops::Conv2dForwardArgs{.out = s.ds_out,
                                    .inp = s.ds_ln,
                                    .weight = p.ds_w,
                                    .shape = {B_, prev.H, prev.H, Cp, s.C, 2, 2, 0},
                                    .prec = prec,
                                    .bias = p.ds_b});
    x = s.ds_out;
  }
  for (size_t b = 0; b < s.blocks.size(); ++b) {
    s.blocks[b].x = x;
    block_forward(s, s.blocks[b], p.blocks[b], first_block(i) + int(b), prec);
    x = s.blocks[b].out;
  }
}

void ConvNextTower::head_forward(ops::Prec prec) {
  const StageActs& last = st_[3];
  const int64_t C = last.C, E = cfg_.embed_dim;
  be_->run(ops::MeanTokensForwardArgs{
      .out = pooled_, .inp = last.blocks.back().out, .B = B_, .Tn = last.H * last.H, .first = 0, .C = C});
  ln_forward(head_ln_, head_mean_, head_rstd_, pooled_, p_.head_ln_w, p_.head_ln_b, B_, C);
  if (!cfg_.vision.head_mlp) {
    be_->run(ops::LinearForwardArgs{.out = feat_raw_,
                                    .inp = head_ln_,
                                    .weight = p_.proj_w,
                                    .bias = nullptr,
                                    .M = B_,
                                    .K = C,
                                    .N = E,
                                    .prec = prec});
    return;
  }
  be_->run(ops::LinearForwardArgs{.out = head_h_,
                                  .inp = head_ln_,
                                  .weight = p_.mlp_fc1_w,
                                  .bias = p_.mlp_fc1_b,
                                  .M = B_,
                                  .K = C,
                                  .N = 2 * E,
                                  .prec = prec});
  be_->run(ops::ActForwardArgs{.out = head_a_, .inp = head_h_, .n = B_ * 2 * E, .act = ops::Act::Gelu});
  be_->run(ops::LinearForwardArgs{.out = feat_raw_,
                                  .inp = head_a_,
                                  .weight = p_.mlp_fc2_w,
                                  .bias = nullptr,
                                  .M = B_,
                                  .K = 2 * E,
                                  .N = E,
                                  .prec = prec});
}

// images [B,3,S,S] -> 4x4 patches -> stem GEMM + LayerNorm2d -> stages -> head -> features [B,E].
const float* ConvNextTower::forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) {
  OC_CHECK(B > 0 && B <= B_max_, "ConvNeXt tower planned for batch <= {}, got {}", B_max_, B);
  B_ = B;
  const VisionCfg& v = cfg_.vision;
  const int64_t S = v.image_size, G = S / kStem, R = B * G * G, C0 = dim(0), E = cfg_.embed_dim;
  draw_drop_path(opts.train);
  images_to_patches(*be_, patches_, images_, images, opts.in == ImagesIn::Backend, B, S, kStem);
  be_->run(ops::LinearForwardArgs{.out = stem_conv_,
                                  .inp = patches_,
                                  .weight = p_.stem_w,
                                  .bias = p_.stem_b,
                                  .M = R,
                                  .K = 3 * kStem * kStem,
                                  .N = C0,
                                  .prec = prec});
  ln_forward(stem_out_, stem_mean_, stem_rstd_, stem_conv_, p_.stem_ln_w, p_.stem_ln_b, R, C0);
  const float* x = stem_out_;
  for (int i = 0; i < 4; ++i) stage_forward(i, x, prec), x = st_[i].blocks.back().out;
  head_forward(prec);
  if (!opts.normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = E});
  return feat_;
}

// ---- backward ------------------------------------------------------------------------
void ConvNextTower::block_backward(const StageActs& s, const BlockActs& a, const ConvNextBlockParams& p,
                                   const ConvNextBlockParams& g, int k, float* d, ops::Prec prec) {
  const int64_t R = rows(s), C = s.C;
  const float* d_branch = d;  // the gradient of gamma * z: d, times each sample's scale
  if (!drop_scale_.empty()) {
    be_->copy(s2_, d, size_t(R * C) * sizeof(float));
    drop_path(s2_, k, R / B_ * C);
    d_branch = s2_;
  }
  be_->copy(s1_, a.z, size_t(R * C) * sizeof(float));  // s1 = d z = gamma * d_branch, dgamma += d_branch . z
  be_->run(
      ops::LayerScaleBackwardArgs{.dgamma = g.gamma, .o_dx = s1_, .dy = d_branch, .gamma = p.gamma, .N = R, .C = C});
  be_->run(ops::LinearBackwardArgs{.dinp = sF_,
                                   .dweight = g.fc2_w,
                                   .dbias = g.fc2_b,
                                   .dout = s1_,
                                   .inp = a.a,
                                   .weight = p.fc2_w,
                                   .M = R,
                                   .K = 4 * C,
                                   .N = C,
                                   .prec = prec});
  be_->run(ops::ActBackwardArgs{.dinp = sF_, .dout = sF_, .inp = a.h, .n = R * 4 * C, .act = ops::Act::Gelu});
  be_->run(ops::LinearBackwardArgs{.dinp = s2_,
                                   .dweight = g.fc1_w,
                                   .dbias = g.fc1_b,
                                   .dout = sF_,
                                   .inp = a.y2,
                                   .weight = p.fc1_w,
                                   .M = R,
                                   .K = C,
                                   .N = 4 * C,
                                   .prec = prec});
  ln_backward(s1_, g.ln_w, g.ln_b, s2_, a.y1, p.ln_w, a.mean, a.rstd, R, C);
  const ops::DwConvShape shape{B_, s.H, s.H, C, kDwK, kDwPad};
  be_->run(ops::DwConv2dBackwardWeightsArgs{
      .dweight = g.dw_w, .dbias = g.dw_b, .dout = s1_, .inp = a.x, .shape = shape, .prec = prec});
  be_->run(ops::DwConv2dBackwardDataArgs{.dinp = s2_, .dout = s1_, .weight = p.dw_w, .shape = shape, .prec = prec});
  be_->run(ops::AddInplaceArgs{.y = d, .x = s2_, .n = R * C});  // + the shortcut's d
}

float* ConvNextTower::stage_backward(int i, float* d, float* spare, ops::Prec prec) {
  const StageActs& s = st_[i];
  const ConvNextStageParams &p = p_.stages[i], &g = g_.stages[i];
  for (size_t b = s.blocks.size(); b-- > 0;)
    block_backward(s, s.blocks[b], p.blocks[b], g.blocks[b], first_block(i) + int(b), d, prec);
  if (i == 0) return d;
  const StageActs& prev = st_[i - 1];
  const int64_t Rp = rows(prev), Cp = prev.C;
  const ops::ConvShape shape{B_, prev.H, prev.H, Cp, s.C, 2, 2, 0};
  be_->run(ops::Conv2dBackwardWeightsArgs{
      .dweight = g.ds_w, .dout = d, .inp = s.ds_ln, .shape = shape, .prec = prec, .dbias = g.ds_b});
  be_->run(ops::Conv2dBackwardDataArgs{.dinp = s1_, .dout = d, .weight = p.ds_w, .shape = shape, .prec = prec});
  ln_backward(spare, g.ds_ln_w, g.ds_ln_b, s1_, prev.blocks.back().out, p.ds_ln_w, s.ds_mean, s.ds_rstd, Rp, Cp);
  return spare;
}

// d_feat_raw_ -> the gradient of the last stage's output map, in dA_.
void ConvNextTower::head_backward(ops::Prec prec) {
  const StageActs& last = st_[3];
  const int64_t C = last.C, E = cfg_.embed_dim;
  if (!cfg_.vision.head_mlp) {
    be_->run(ops::LinearBackwardArgs{.dinp = d_head_ln_,
                                     .dweight = g_.proj_w,
                                     .dbias = nullptr,
                                     .dout = d_feat_raw_,
                                     .inp = head_ln_,
                                     .weight = p_.proj_w,
                                     .M = B_,
                                     .K = C,
                                     .N = E,
                                     .prec = prec});
  } else {
    be_->run(ops::LinearBackwardArgs{.dinp = d_head_a_,
                                     .dweight = g_.mlp_fc2_w,
                                     .dbias = nullptr,
                                     .dout = d_feat_raw_,
                                     .inp = head_a_,
                                     .weight = p_.mlp_fc2_w,
                                     .M = B_,
                                     .K = 2 * E,
                                     .N = E,
                                     .prec = prec});
    be_->run(ops::ActBackwardArgs{
        .dinp = d_head_a_, .dout = d_head_a_, .inp = head_h_, .n = B_ * 2 * E, .act = ops::Act::Gelu});
    be_->run(ops::LinearBackwardArgs{.dinp = d_head_ln_,
                                     .dweight = g_.mlp_fc1_w,
                                     .dbias = g_.mlp_fc1_b,
                                     .dout = d_head_a_,
                                     .inp = head_ln_,
                                     .weight = p_.mlp_fc1_w,
                                     .M = B_,
                                     .K = C,
                                     .N = 2 * E,
                                     .prec = prec});
  }
  ln_backward(d_pooled_, g_.head_ln_w, g_.head_ln_b, d_head_ln_, pooled_, p_.head_ln_w, head_mean_, head_rstd_, B_, C);
  be_->zero(dA_, size_t(rows(last) * C) * sizeof(float));
  be_->run(
      ops::MeanTokensBackwardArgs{.dinp = dA_, .dout = d_pooled_, .B = B_, .Tn = last.H * last.H, .first = 0, .C = C});
}

void ConvNextTower::backward(const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_ && g_.stem_w, "ConvNeXt tower was planned for inference; backward needs training activations");
  const int64_t E = cfg_.embed_dim, R0 = rows(st_[0]), C0 = dim(0);
  be_->run(ops::L2NormBackwardArgs{.dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B_, .C = E});
  head_backward(prec);
  float *d = dA_, *spare = dB_;
  for (int i = 3; i >= 0; --i) {
    float* next = stage_backward(i, d, spare, prec);
    if (next != d) std::swap(d, spare);
  }
  ln_backward(spare, g_.stem_ln_w, g_.stem_ln_b, d, stem_conv_, p_.stem_ln_w, stem_mean_, stem_rstd_, R0, C0);
  be_->run(ops::LinearBackwardArgs{.dinp = nullptr,
                                   .dweight = g_.stem_w,
                                   .dbias = g_.stem_b,
                                   .dout = spare,
                                   .inp = patches_,
                                   .weight = p_.stem_w,
                                   .M = R0,
                                   .K = 3 * kStem * kStem,
                                   .N = C0,
                                   .prec = prec});
}

}  // namespace oc
