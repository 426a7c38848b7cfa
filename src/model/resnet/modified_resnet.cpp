#include "model/resnet/modified_resnet.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ops/batchnorm.h"
#include "ops/bf16_ops.h"
#include "ops/conv.h"
#include "ops/embed.h"
#include "ops/gemm_bf16.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/pool.h"

namespace oc {
namespace {
constexpr double kBnEps = 1e-5, kBnMomentum = 0.1;  // nn.BatchNorm2d's defaults, as ModifiedResNet builds them
}  // namespace

float* ResNetTower::buf(size_t n) {
  bufs_.push_back(be_->alloc_floats(std::max<size_t>(n, 1), fmt::format("{} ResNet tower, batch {}", cfg_.name, B_max_),
                                    /*zero=*/false));
  floats_ += n;
  return bufs_.back().f32();
}

void ResNetTower::plan_unit(Unit& u, const ConvBnParams& c, int64_t H, int64_t W, int64_t stride, bool relu, float* y) {
  u.H = H, u.W = W, u.stride = stride, u.pad = c.k / 2, u.relu = relu;
  u.OH = ops::conv_out_size(H, c.k, stride, u.pad), u.OW = ops::conv_out_size(W, c.k, stride, u.pad);
  const size_t n = size_t(B_max_ * u.OH * u.OW * c.cout);
  u.y = y ? y : buf(n);
  if (!training_) return;  // inference runs the folded conv straight into y
  u.a = buf(n);
  u.mean = buf(size_t(c.cout));
  u.rstd = buf(size_t(c.cout));
}

void ResNetTower::plan(const TowerPlan& plan) {
  const ModelCfg& cfg = cfg_;
  const ResNetParams& rn = p_;
  const int64_t B = plan.B_max;
  const bool training = plan.training;
  OC_CHECK(rn.blocks.size() > 0, "ResNetTower planned before its parameters were bound");
  release_prepared();  // the units are planned anew (and a training plan writes the weights)
  B_max_ = B, training_ = training;
  bufs_.clear(), floats_ = 0;
  const int64_t S = cfg.vision.image_size, C = 32 * int64_t(cfg.vision.width), E = cfg.embed_dim;
  size_t biggest = 0;  // the largest map, for the gradient buffers
  auto track = [&](int64_t h, int64_t w, int64_t c) { biggest = std::max(biggest, size_t(B * h * w * c)); };
  img_ = buf(size_t(B * S * S * 3));
  plan_unit(stem_[0], rn.stem[0], S, S, 2, true);
  for (int i = 1; i < 3; ++i) plan_unit(stem_[i], rn.stem[i], stem_[0].OH, stem_[0].OW, 1, true);
  int64_t H = stem_[0].OH / 2, W = stem_[0].OW / 2;
  track(stem_[0].OH, stem_[0].OW, rn.stem[2].cout);
  stem_pool_ = buf(size_t(B * H * W * rn.stem[2].cout));
  const float* x = stem_pool_;
  blocks_.assign(rn.blocks.size(), Block{});
  for (size_t i = 0; i < rn.blocks.size(); ++i) {
    const BottleneckParams& p = rn.blocks[i];
    Block& b = blocks_[i];
    b.H = H, b.W = W, b.x = const_cast<float*>(x);
    plan_unit(b.u1, p.c1, H, W, 1, true);
    plan_unit(b.u2, p.c2, H, W, 1, true);
    const int64_t OH = H / p.stride, OW = W / p.stride;
    if (p.stride > 1) b.p2 = buf(size_t(B * OH * OW * p.c2.cout));
    plan_unit(b.u3, p.c3, OH, OW, 1, false);
    if (p.has_down) {
      if (p.stride > 1) b.q = buf(size_t(B * OH * OW * p.c1.cin));
      // Inference: the identity into the block's output, which conv3 then adds to in place.
      plan_unit(b.ud, p.down, OH, OW, 1, false, training ? nullptr : b.u3.y);
    }
    track(H, W, std::max(p.c1.cin, p.c2.cout)), track(OH, OW, p.c3.cout);
    x = b.u3.y, H = OH, W = OW;
  }
  const int64_t T = H * W + 1, heads = attnpool_heads(cfg.vision);
  OC_CHECK(H == cfg.vision.grid() && W == cfg.vision.grid(), "ResNet map {}x{} where the attention pool expects {}", H,
           W, cfg.vision.grid());
  tok_ = buf(size_t(B * T * C)), tok0_ = buf(size_t(B * C)), q_ = buf(size_t(B * C));
  k_ = buf(size_t(B * T * C)), v_ = buf(size_t(B * T * C)), att_ = buf(size_t(B * heads * T));
  pooled_ = buf(size_t(B * C)), feat_raw_ = buf(size_t(B * E)), feat_ = buf(size_t(B * E)), norm_ = buf(size_t(B));
  first_.assign(size_t(B), 0);
  if (!training) tok16_ = reinterpret_cast<bf16*>(buf(size_t(B * T * C + 1) / 2));  // pool_forward_bf16
  if (!training) return;
  d_feat_raw_ = buf(size_t(B * E)), d_pooled_ = buf(size_t(B * C)), dq_ = buf(size_t(B * C));
  dtok0_ = buf(size_t(B * C)), dk_ = buf(size_t(B * T * C)), dv_ = buf(size_t(B * T * C));
  d_tok_ = buf(size_t(B * T * C)), att_scratch_ = buf(size_t(B * heads * T));
  dA_ = buf(biggest), dB_ = buf(biggest), s1_ = buf(biggest), s2_ = buf(biggest), s3_ = buf(biggest);
}

double ResNetTower::mib() const { return double(floats_) * sizeof(float) / (1 << 20); }

// ---- forward -------------------------------------------------------------------------
void ResNetTower::unit_forward(const Unit& u, const ConvBnParams& c, const float* x, ops::Prec prec) {
  be_->run(ops::Conv2dForwardArgs{.out = u.a,
                                  .inp = x,
                                  .weight = c.conv,
                                  .shape = conv_shape(u, c),
                                  .prec = prec});
  be_->run(ops::BatchNormForwardArgs{.out = u.y,
                                     .mean = u.mean,
                                     .rstd = u.rstd,
                                     .running_mean = c.bn_mean,
                                     .running_var = c.bn_var,
                                     .inp = u.a,
                                     .weight = c.bn_w,
                                     .bias = c.bn_b,
                                     .R = B_ * u.OH * u.OW,
                                     .C = c.cout,
                                     .eps = kBnEps,
                                     .momentum = kBnMomentum,
                                     .training = train_bn_});
  if (train_bn_) ops::add_scalar(*be_, c.bn_count, 1.0f);  // num_batches_tracked, as PyTorch counts it
  if (u.relu) be_->run(ops::ReluForwardArgs{.out = u.y, .inp = u.y, .n = B_ * u.OH * u.OW * c.cout});
}

void ResNetTower::block_forward(const Block& b, const BottleneckParams& p, ops::Prec prec) {
  unit_forward(b.u1, p.c1, b.x, prec);
  unit_forward(b.u2, p.c2, b.u1.y, prec);
  const float* mid = b.u2.y;
  if (p.stride > 1) {
    be_->run(ops::AvgPoolForwardArgs{
        .out = b.p2, .inp = b.u2.y, .N = B_, .H = b.H, .W = b.W, .C = p.c2.cout, .k = p.stride});
    mid = b.p2;
  }
  unit_forward(b.u3, p.c3, mid, prec);
  const int64_t n = B_ * b.u3.OH * b.u3.OW * p.c3.cout;
  const float* identity = b.x;
  if (p.has_down) {
    const float* q = b.x;
    if (p.stride > 1) {
      be_->run(
          ops::AvgPoolForwardArgs{.out = b.q, .inp = b.x, .N = B_, .H = b.H, .W = b.W, .C = p.c1.cin, .k = p.stride});
      q = b.q;
    }
    unit_forward(b.ud, p.down, q, prec);
    identity = b.ud.y;
  }
  be_->run(ops::AddInplaceArgs{.y = b.u3.y, .x = identity, .n = n});
  be_->run(ops::ReluForwardArgs{.out = b.u3.y, .inp = b.u3.y, .n = n});
}

// ---- inference: BatchNorm folded into the convs ----------------------------------------
template <class F>
void ResNetTower::each_unit(F f) {
  for (int i = 0; i < 3; ++i) f(stem_[i], p_.stem[i]);
  for (size_t i = 0; i < blocks_.size(); ++i) {
    Block& b = blocks_[i];
    const BottleneckParams& p = p_.blocks[i];
    f(b.u1, p.c1), f(b.u2, p.c2), f(b.u3, p.c3);
    if (p.has_down) f(b.ud, p.down);
  }
}

void ResNetTower::fold() {
  size_t total = 0;
  each_unit([&](Unit&, const ConvBnParams& c) { total += size_t(c.cout * c.cin * c.k * c.k + c.cout); });
  folded_ = be_->alloc_floats(total, fmt::format("{} ResNet tower, folded BatchNorm", cfg_.name), /*zero=*/false);
  float* at = folded_.f32();
  std::vector<float> w, bn, out;
  each_unit([&](Unit& u, const ConvBnParams& c) {
    const size_t per = size_t(c.cin * c.k * c.k), nw = size_t(c.cout) * per, C = size_t(c.cout);
    w.resize(nw), bn.resize(4 * C), out.resize(nw + C);
    be_->copy_to_host(w.data(), c.conv, nw * sizeof(float));
    const float* src[4] = {c.bn_w, c.bn_b, c.bn_mean, c.bn_var};
    for (int j = 0; j < 4; ++j) be_->copy_to_host(bn.data() + j * C, src[j], C * sizeof(float));
    for (size_t o = 0; o < C; ++o) {  // in double: the folded values are rounded once
      const double g = double(bn[o]) / std::sqrt(double(bn[3 * C + o]) + kBnEps);
      for (size_t i = 0; i < per; ++i) out[o * per + i] = float(double(w[o * per + i]) * g);
      out[nw + o] = float(double(bn[C + o]) - double(bn[2 * C + o]) * g);
    }
    be_->copy_from_host(at, out.data(), (nw + C) * sizeof(float));
    u.fw = at, u.fb = at + nw;
    be_->prepare_conv_weight(u.fw, int64_t(nw));
    at += nw + C;
  });
  folded_valid_ = true;
}

// fp32 inference: the attention pool's four projections kept in oneDNN's blocked layout, as
// Clip::prepare_f32 keeps the transformers' (un-prepared, the M = HW + 1 row GEMMs re-pack
// their 2048x2048 weights on every call: a fifth of RN50's batch-1 time on a Zen 4).
void ResNetTower::prepare_pool_f32() {
  const int64_t C = 32 * int64_t(cfg_.vision.width);
  for (const float* w : {p_.pool.q_w, p_.pool.k_w, p_.pool.v_w}) be_->prepare_weight_f32(w, C, C);
  be_->prepare_weight_f32(p_.pool.c_w, cfg_.embed_dim, C);
  pool_f32_ = true;
}

// bf16 inference: the same four as bf16 copies, prepared for the native bf16 GEMM (without
// this, every call rounds and packs the fp32 weights: ~6% of RN50's amp_bf16 batch-1 time).
void ResNetTower::prepare_pool_bf16() {
  const int64_t C = 32 * int64_t(cfg_.vision.width), E = cfg_.embed_dim;
  const AttnPoolParams& p = p_.pool;
  pool16_ = be_->alloc_floats(size_t((3 * C * C + E * C + 1) / 2),
                              fmt::format("{} attention pool, bf16 weights", cfg_.name), /*zero=*/false);
  bf16* at = pool16_.b16();
  for (auto [w, w16, n] : {std::tuple{p.q_w, &q16_, C}, {p.k_w, &k16_, C}, {p.v_w, &v16_, C}, {p.c_w, &c16_, E}}) {
    be_->run(ops::CastToBf16Args{.dst = at, .src = w, .n = n * C});
    be_->prepare_weight_bf16(at, n, C);
    *w16 = at, at += n * C;
  }
}

void ResNetTower::prepare_inference(ops::Prec prec) {
  if (!folded_valid_) fold();
  if (prec == ops::Prec::F32 && !pool_f32_) prepare_pool_f32();
  if (prec == ops::Prec::BF16 && !q16_) prepare_pool_bf16();
}

void ResNetTower::release_prepared() {
  if (pool_f32_)
    for (const float* w : {p_.pool.q_w, p_.pool.k_w, p_.pool.v_w, p_.pool.c_w}) be_->release_weight_f32(w);
  pool_f32_ = false;
  if (q16_) {
    for (const bf16* w : {q16_, k16_, v16_, c16_}) be_->release_weight_bf16(w);
    pool16_.reset();
    q16_ = k16_ = v16_ = c16_ = nullptr;
  }
  if (!folded_valid_) return;
  each_unit([&](Unit& u, const ConvBnParams&) {
    be_->release_conv_weight(u.fw);
    u.fw = u.fb = nullptr;
  });
  folded_.reset();
  folded_valid_ = false;
}

void ResNetTower::unit_infer(const Unit& u, const ConvBnParams& c, const float* x, ops::Prec prec,
                             const float* residual, bool relu) const {
  be_->run(ops::Conv2dForwardArgs{.out = u.y,
                                  .inp = x,
                                  .weight = u.fw,
                                  .shape = conv_shape(u, c),
                                  .prec = prec,
                                  .bias = u.fb,
                                  .residual = residual,
                                  .relu = relu});
}

void ResNetTower::block_infer(const Block& b, const BottleneckParams& p, ops::Prec prec) {
  unit_infer(b.u1, p.c1, b.x, prec, nullptr, true);
  unit_infer(b.u2, p.c2, b.u1.y, prec, nullptr, true);
  const float* mid = b.u2.y;
  if (p.stride > 1) {
    be_->run(ops::AvgPoolForwardArgs{
        .out = b.p2, .inp = b.u2.y, .N = B_, .H = b.H, .W = b.W, .C = p.c2.cout, .k = p.stride});
    mid = b.p2;
  }
  const float* identity = b.x;
  if (p.has_down) {  // planned to write b.u3.y: conv3 adds to it in place
    const float* q = b.x;
    if (p.stride > 1) {
      be_->run(
          ops::AvgPoolForwardArgs{.out = b.q, .inp = b.x, .N = B_, .H = b.H, .W = b.W, .C = p.c1.cin, .k = p.stride});
      q = b.q;
    }
    unit_infer(b.ud, p.down, q, prec, nullptr, false);
    identity = b.ud.y;
  }
  unit_infer(b.u3, p.c3, mid, prec, identity, true);
}

// OpenAI's AttentionPool2d: the mean token (row 0) is the one query, over all HW+1 tokens as
// keys and values. OpenCLIP 2.24.0 queries with every token and keeps row 0: the same output.
void ResNetTower::pool_forward(const AttnPoolParams& p, const float* feat, ops::Prec prec) {
  const int64_t C = 32 * int64_t(cfg_.vision.width), HW = cfg_.vision.grid() * cfg_.vision.grid(), T = HW + 1;
  be_->run(ops::AttnPoolTokensForwardArgs{.x = tok_, .feat = feat, .pos = p.pos, .N = B_, .HW = HW, .C = C});
  if (prec == ops::Prec::BF16 && q16_) return pool_forward_bf16(p, C, T);
  be_->run(ops::GatherRowsForwardArgs{
      .out = tok0_, .inp = tok_, .idx = {first_.data(), size_t(B_)}, .B = B_, .Tn = T, .C = C});
  be_->run(ops::LinearForwardArgs{
      .out = q_, .inp = tok0_, .weight = p.q_w, .bias = p.q_b, .M = B_, .K = C, .N = C, .prec = prec});
  be_->run(ops::LinearForwardArgs{
      .out = k_, .inp = tok_, .weight = p.k_w, .bias = p.k_b, .M = B_ * T, .K = C, .N = C, .prec = prec});
  be_->run(ops::LinearForwardArgs{
      .out = v_, .inp = tok_, .weight = p.v_w, .bias = p.v_b, .M = B_ * T, .K = C, .N = C, .prec = prec});
  be_->run(ops::CrossAttentionForwardArgs{.out = pooled_, .att = att_, .q = q_, .k = k_, .v = v_, .ldq = C, .ldk = C,
                                          .ldv = C, .B = B_, .Tq = 1, .Tk = T, .C = C, .H = attnpool_heads(cfg_.vision),
                                          .prec = prec});
  be_->run(ops::LinearForwardArgs{.out = feat_raw_,
                                  .inp = pooled_,
                                  .weight = p.c_w,
                                  .bias = p.c_b,
                                  .M = B_,
                                  .K = C,
                                  .N = cfg_.embed_dim,
                                  .prec = prec});
}

// Inference at bf16: the tokens cast to bf16 once, the four projections on the prepared bf16
// weights with the bias in the GEMM's epilogue (the queries: row 0 of each image, read in place
// with a row stride of T * C). The same math as the fp32-weight path at Prec::BF16 (bf16
// operands, fp32 accumulation) up to the order of the sums.
void ResNetTower::pool_forward_bf16(const AttnPoolParams& p, int64_t C, int64_t T) {
  const int64_t E = cfg_.embed_dim;
  be_->run(ops::CastToBf16Args{.dst = tok16_, .src = tok_, .n = B_ * T * C});
  auto proj = [&](float* out, const bf16* in, int64_t M, int64_t lda, const bf16* w, const float* b, int64_t N) {
    be_->run(ops::GemmBf16Args{
        .ta = false, .tb = true, .M = M, .N = N, .K = C, .A = in, .lda = lda, .B = w, .ldb = C, .C = out, .ldc = N,
        .e = {.bias = b}});
  };
  proj(q_, tok16_, B_, T * C, q16_, p.q_b, C);
  proj(k_, tok16_, B_ * T, C, k16_, p.k_b, C);
  proj(v_, tok16_, B_ * T, C, v16_, p.v_b, C);
  be_->run(ops::CrossAttentionForwardArgs{.out = pooled_, .att = att_, .q = q_, .k = k_, .v = v_, .ldq = C, .ldk = C,
                                          .ldv = C, .B = B_, .Tq = 1, .Tk = T, .C = C, .H = attnpool_heads(cfg_.vision),
                                          .prec = ops::Prec::BF16});
  be_->run(ops::CastToBf16Args{.dst = tok16_, .src = pooled_, .n = B_ * C});  // the tokens are used up
  proj(feat_raw_, tok16_, B_, C, c16_, p.c_b, E);
}

const float* ResNetTower::forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) {
  const bool train_bn = opts.train && !freeze_bn_stats_, normalize = opts.normalize;
  OC_CHECK(B > 0 && B <= B_max_, "ResNet tower planned for batch <= {}, got {}", B_max_, B);
  B_ = B, train_bn_ = train_bn;
  const int64_t S = cfg_.vision.image_size;
  x0_ = images;  // in backend memory: channels-last already (input().compute_layout)
  if (opts.in == ImagesIn::Host) {
    nhwc_.resize(size_t(B * S * S * 3));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t hw = 0; hw < S * S; ++hw)
          nhwc_[size_t((b * S * S + hw) * 3 + c)] = images[(b * 3 + c) * S * S + hw];
    be_->copy_from_host(img_, nhwc_.data(), nhwc_.size() * sizeof(float));
    x0_ = img_;
  }
  const float* x = x0_;
  const bool infer = !training_;  // planned for inference: BatchNorm folded (eval mode)
  if (infer) prepare_inference(prec);
  for (int i = 0; i < 3; ++i) {
    if (infer) unit_infer(stem_[i], p_.stem[i], x, prec, nullptr, true);
    else unit_forward(stem_[i], p_.stem[i], x, prec);
    x = stem_[i].y;
  }
  be_->run(ops::AvgPoolForwardArgs{
      .out = stem_pool_, .inp = x, .N = B, .H = stem_[2].OH, .W = stem_[2].OW, .C = p_.stem[2].cout, .k = 2});
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (infer) block_infer(blocks_[i], p_.blocks[i], prec);
    else block_forward(blocks_[i], p_.blocks[i], prec);
  }
  pool_forward(p_.pool, blocks_.back().u3.y, prec);
  if (!normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = cfg_.embed_dim});
  return feat_;
}

// ---- backward ------------------------------------------------------------------------
void ResNetTower::unit_backward(const Unit& u, const ConvBnParams& c, const ConvBnParams& g, float* dy, const float* x,
                                float* dx, ops::Prec prec) {
  const int64_t R = B_ * u.OH * u.OW;
  if (u.relu) be_->run(ops::ReluBackwardArgs{.dinp = dy, .dout = dy, .out = u.y, .n = R * c.cout});
  be_->run(ops::BatchNormBackwardArgs{.dinp = dy,
                                      .dweight = g.bn_w,
                                      .dbias = g.bn_b,
                                      .dout = dy,
                                      .inp = u.a,
                                      .weight = c.bn_w,
                                      .mean = u.mean,
                                      .rstd = u.rstd,
                                      .R = R,
                                      .C = c.cout,
                                      .training = train_bn_});
  be_->run(ops::Conv2dBackwardWeightsArgs{.dweight = g.conv,
                                          .dout = dy,
                                          .inp = x,
                                          .shape = conv_shape(u, c),
                                          .prec = prec});
  if (dx)
    be_->run(ops::Conv2dBackwardDataArgs{.dinp = dx,
                                         .dout = dy,
                                         .weight = c.conv,
                                         .shape = conv_shape(u, c),
                                         .prec = prec});
}

// d_out (mutable): the gradient of the block's output; dx (assigned): of its input.
void ResNetTower::block_backward(const Block& b, const BottleneckParams& p, const BottleneckParams& g, float* d_out,
                                 float* dx, ops::Prec prec) {
  const int64_t n_out = B_ * b.u3.OH * b.u3.OW * p.c3.cout, n_in = B_ * b.H * b.W * p.c1.cin;
  be_->run(ops::ReluBackwardArgs{.dinp = d_out, .dout = d_out, .out = b.u3.y, .n = n_out});
  if (p.has_down) {  // the identity path first, into dx
    be_->copy(s1_, d_out, size_t(n_out) * sizeof(float));
    unit_backward(b.ud, p.down, g.down, s1_, p.stride > 1 ? b.q : b.x, p.stride > 1 ? s2_ : dx, prec);
    if (p.stride > 1)
      be_->run(
          ops::AvgPoolBackwardArgs{.dinp = dx, .dout = s2_, .N = B_, .H = b.H, .W = b.W, .C = p.c1.cin, .k = p.stride});
  } else {
    be_->copy(dx, d_out, size_t(n_in) * sizeof(float));
  }
  unit_backward(b.u3, p.c3, g.c3, d_out, p.stride > 1 ? b.p2 : b.u2.y, p.stride > 1 ? s1_ : s2_, prec);
  if (p.stride > 1)
    be_->run(
        ops::AvgPoolBackwardArgs{.dinp = s2_, .dout = s1_, .N = B_, .H = b.H, .W = b.W, .C = p.c2.cout, .k = p.stride});
  unit_backward(b.u2, p.c2, g.c2, s2_, b.u1.y, s1_, prec);
  unit_backward(b.u1, p.c1, g.c1, s1_, b.x, s3_, prec);
  be_->run(ops::AddInplaceArgs{.y = dx, .x = s3_, .n = n_in});
}

void ResNetTower::pool_backward(const AttnPoolParams& p, const AttnPoolParams& g, float* d_feat, ops::Prec prec) {
  const int64_t C = 32 * int64_t(cfg_.vision.width), HW = cfg_.vision.grid() * cfg_.vision.grid(), T = HW + 1;
  be_->run(ops::LinearBackwardArgs{.dinp = d_pooled_,
                                   .dweight = g.c_w,
                                   .dbias = g.c_b,
                                   .dout = d_feat_raw_,
                                   .inp = pooled_,
                                   .weight = p.c_w,
                                   .M = B_,
                                   .K = C,
                                   .N = cfg_.embed_dim,
                                   .prec = prec});
  be_->run(ops::CrossAttentionBackwardArgs{.dq = dq_, .dk = dk_, .dv = dv_, .scratch = att_scratch_,
                                           .dout = d_pooled_, .q = q_, .k = k_, .v = v_, .att = att_, .ldq = C,
                                           .ldk = C, .ldv = C, .B = B_, .Tq = 1, .Tk = T, .C = C,
                                           .H = attnpool_heads(cfg_.vision), .prec = prec});
  // d_tok = dk W_k + dv W_v (dv W_v into dk_, free by then), and dq W_q into the mean token's row.
  be_->run(ops::LinearBackwardArgs{.dinp = d_tok_, .dweight = g.k_w, .dbias = g.k_b, .dout = dk_, .inp = tok_,
                                   .weight = p.k_w, .M = B_ * T, .K = C, .N = C, .prec = prec});
  be_->run(ops::LinearBackwardArgs{.dinp = dk_, .dweight = g.v_w, .dbias = g.v_b, .dout = dv_, .inp = tok_,
                                   .weight = p.v_w, .M = B_ * T, .K = C, .N = C, .prec = prec});
  be_->run(ops::AddInplaceArgs{.y = d_tok_, .x = dk_, .n = B_ * T * C});
  be_->run(ops::LinearBackwardArgs{.dinp = dtok0_, .dweight = g.q_w, .dbias = g.q_b, .dout = dq_, .inp = tok0_,
                                   .weight = p.q_w, .M = B_, .K = C, .N = C, .prec = prec});
  be_->run(ops::GatherRowsBackwardArgs{
      .dinp = d_tok_, .dout = dtok0_, .idx = {first_.data(), size_t(B_)}, .B = B_, .Tn = T, .C = C});
  be_->run(ops::AttnPoolTokensBackwardArgs{.dfeat = d_feat, .dpos = g.pos, .dx = d_tok_, .N = B_, .HW = HW, .C = C});
}

void ResNetTower::backward(const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_ && g_.stem[0].conv, "ResNet tower was planned for inference; backward needs training activations");
  be_->run(ops::L2NormBackwardArgs{
      .dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B_, .C = cfg_.embed_dim});
  float *cur = dA_, *next = dB_;
  pool_backward(p_.pool, g_.pool, cur, prec);
  for (size_t i = blocks_.size(); i-- > 0;) {
    block_backward(blocks_[i], p_.blocks[i], g_.blocks[i], cur, next, prec);
    std::swap(cur, next);
  }
  be_->run(ops::AvgPoolBackwardArgs{
      .dinp = next, .dout = cur, .N = B_, .H = stem_[2].OH, .W = stem_[2].OW, .C = p_.stem[2].cout, .k = 2});
  unit_backward(stem_[2], p_.stem[2], g_.stem[2], next, stem_[1].y, cur, prec);
  unit_backward(stem_[1], p_.stem[1], g_.stem[1], cur, stem_[0].y, next, prec);
  unit_backward(stem_[0], p_.stem[0], g_.stem[0], next, x0_, nullptr, prec);  // no gradient for the images
}

}  // namespace oc
