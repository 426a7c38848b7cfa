#include "model/towers.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/checked.h"
#include "ops/embed.h"
#include "ops/gemm_int8.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/loss.h"

namespace oc {

namespace {
size_t up16(size_t n) { return (n + 15) / 16 * 16; }

// A tower's buffers outside the block stack, each named with its size in one line; then one
// allocation, carved into 64-byte aligned slices in the order they were named.
class BufferPlan {
 public:
  BufferPlan& add(float** slot, size_t n) {
    items_.push_back({slot, n});
    return *this;
  }
  void allocate(ops::FloatArena& arena) {
    int64_t total = 0;
    for (const Item& it : items_) total = checked_add("tower buffers", {total, int64_t(up16(it.n))});
    arena.resize(size_t(total), false);
    float* p = arena.data();
    for (const Item& it : items_) *it.slot = p, p += up16(it.n);
  }

 private:
  struct Item {
    float** slot;
    size_t n;
  };
  std::vector<Item> items_;
};

StackDims dims(int64_t B, int64_t T, int64_t W, int64_t H, int64_t F, int64_t L, bool causal, ops::Act act, double eps,
               ops::Prec prec, const StackMemory& mem, const std::vector<BlockWeights16>* w16,
               const std::vector<BlockWeightsInt8>* w8, ops::Backend* be) {
  StackDims d;
  d.be = be;
  d.B = B, d.T = T, d.W = W, d.H = H, d.F = F, d.layers = L, d.causal = causal;
  d.act = act;
  d.eps = eps;
  d.prec = prec;
  if (mem.bf16_acts()) {
    OC_CHECK(prec == ops::Prec::BF16 && (w16 || w8),
             "tower planned with bf16 activations runs only in bf16 with bf16 or int8 weights");
    if (w8)
      d.w8 = w8;  // int8 inference
    else
      d.w16 = w16;
  }
  return d;
}
ops::Act block_act(const ModelCfg& c) { return c.quick_gelu ? ops::Act::QuickGelu : ops::Act::Gelu; }
}  // namespace

// timm's blocks use nn.GELU whatever OpenCLIP's quick_gelu says (it reaches only its own towers).
StackDims VisionTower::stack_dims(int64_t B, ops::Prec prec) const {
  const auto& v = cfg_.vision;
  return dims(B, T_, v.width, v.heads(), v.mlp_width(), v.layers, false, v.timm() ? ops::Act::Gelu : block_act(cfg_),
              v.ln_eps, prec, mem_, w16_, w8_, be_);
}

// ---------------------------------------------------------------------------------------
void VisionTower::plan(const ModelCfg& cfg, int64_t B, bool training, bool checkpoint, bool bf16_acts) {
  cfg_ = cfg, B_max_ = B, training_ = training;
  const auto& v = cfg.vision;
  const int64_t W = v.width, T = v.tokens(), Np = int64_t(v.grid()) * v.grid(), K = 3 * v.patch_size * v.patch_size,
                E = cfg.embed_dim;
  mem_.set_label(fmt::format("{} vision tower, batch {}", cfg.name, B));
  mem_.plan(B, T, W, v.heads(), v.mlp_width(), v.layers, training, checkpoint, bf16_acts);
  const bool ln_every_token = (v.avg_pool && !v.final_ln_after_pool) || v.timm();  // timm: trunk.norm
  const size_t BT = size_t(B * T), BTW = size_t(B * T * W), BW = size_t(B * W), BE = size_t(B * E);
  const size_t vit = v.timm() ? 0 : 1;  // buffers only OpenCLIP's ViT uses (timm: 0 floats)
  extra_.bind(*be_, mem_.label() + " (pooling, projection, loss inputs)");
  const size_t image_floats = size_t(B * 3 * v.image_size * v.image_size);
  BufferPlan()
      .add(&images_, be_->host_memory() ? 0 : image_floats)  // the uploaded batch
      .add(&patches_, size_t(B * Np * K))                    // im2patches output
      .add(&patch_out_, vit * size_t(B * Np * W))            // conv1 as a linear layer
      .add(&x0_, vit * BTW)                                  // class token + patches + positions
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
      .add(&d_patch_out_, vit * size_t(B * Np * W))
      .add(&x_drop_, training && v.patch_dropout > 0 ? BTW : 0)  // the kept tokens (patch dropout)
      .add(&ln_all_, ln_every_token ? BTW : 0)                   // ln_post of every token
      .allocate(extra_);
  cls_index_.assign(size_t(B), 0);
  if (v.timm()) timm_plan(B);
}

bool VisionTower::takes_backend_images() const {
  const auto& v = cfg_.vision;
  return int64_t(v.grid()) * v.patch_size == v.image_size;
}

const float* VisionTower::forward(const ClipParams& p, const float* images, int64_t B, ops::Prec prec,
                                  bool normalize, bool drop_patches, ImagesIn in) {
  OC_CHECK(B > 0 && B <= B_max_, "vision tower planned for batch <= {}, got {}", B_max_, B);
  B_ = B;
  drop_ = drop_patches && training_ && cfg_.vision.patch_dropout > 0;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, Np = int64_t(v.grid()) * v.grid(), P = v.patch_size, K = 3 * P * P, E = cfg_.embed_dim;
  const int64_t S = v.grid() * P;  // below image_size only for a timm tower whose conv drops a remainder
  OC_CHECK(in == ImagesIn::Host || S == v.image_size, "images in backend memory for a tower that crops them to its "
           "grid ({} of {} pixels) on the host", S, v.image_size);
  const float* img = S == v.image_size ? images : crop_to_grid(images, B);
  if (in == ImagesIn::Host && !be_->host_memory()) {  // the host backends read it in place
    be_->copy_from_host(images_, img, sizeof(float) * size_t(B * 3 * S * S));
    img = images_;
  }
  be_->run(ops::Im2PatchesArgs{.patches = patches_, .img = img, .B = B, .S = S, .P = P});
  if (v.timm()) {
    timm_forward(p, B, prec);
  } else {
    const ops::Int8Weight* conv8 = w8_all_ ? w8_all_->vision_patch() : nullptr;
    if (conv8)  // int8 inference: conv1 as an int8 GEMM too (patches quantized per row)
      ops::gemm_int8(*be_, {.M = B * Np, .lda = K, .W = conv8, .C = patch_out_, .ldc = W, .A32 = patches_});
    else
      be_->run(ops::LinearForwardArgs{.out = patch_out_,
                                      .inp = patches_,
                                      .weight = p.v_conv,
                                      .bias = nullptr,
                                      .M = B * Np,
                                      .K = K,
                                      .N = W,
                                      .prec = prec});
    be_->run(ops::VitEmbedForwardArgs{.x = x0_, .patch_out = patch_out_, .cls = p.v_cls, .pos = p.v_pos, .B = B,
                                      .Np = Np, .C = W});
    const float* emb = patch_dropout_forward(B);  // x0_, or the kept tokens (T_ of them)
    BlockActs a0 = mem_.layer(0, B, T_);
    ln_pre_forward(p, a0.x, emb, B);
    stack_forward(p.v_blocks, mem_, stack_dims(B, prec));
    pool_forward(p, B);  // ln_post and the class token or the patch mean -> pooled_
    be_->run(
        ops::ProjForwardArgs{.out = feat_raw_, .inp = pooled_, .w = p.v_proj, .M = B, .K = W, .N = E, .prec = prec});
  }
  if (!normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = E});
  return feat_;
}

void VisionTower::backward(const ClipParams& p, const ClipParams& g, const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_, "vision tower was planned for inference; backward needs training activations");
  const int64_t B = B_;
  const auto& v = cfg_.vision;
  const int64_t W = v.width, Np = int64_t(v.grid()) * v.grid(), P = v.patch_size, K = 3 * P * P, E = cfg_.embed_dim;
  be_->run(ops::L2NormBackwardArgs{.dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B, .C = E});
  if (v.timm()) return timm_backward(p, g, B, prec);
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

// ---------------------------------------------------------------------------------------
void TextTower::plan(const ModelCfg& cfg, int64_t B, bool training, bool checkpoint, bool bf16_acts) {
  cfg_ = cfg, B_max_ = B, training_ = training;
  const auto& t = cfg.text;
  const int64_t W = t.width, T = t.context_length, E = cfg.embed_dim;
  mem_.set_label(fmt::format("{} text tower, batch {}", cfg.name, B));
  mem_.plan(B, T, W, t.heads, t.mlp_width(), t.layers, training, checkpoint, bf16_acts);
  const size_t BW = size_t(B * W), BE = size_t(B * E);
  extra_.bind(*be_, mem_.label() + " (pooling, projection, loss inputs)");
  BufferPlan()
      .add(&pooled_in_, BW).add(&pooled_, BW)                    // the pooled token before / after ln_final
      .add(&fin_mean_, size_t(B)).add(&fin_rstd_, size_t(B))      // ln_final statistics
      .add(&feat_raw_, BE).add(&feat_, BE).add(&norm_, size_t(B))
      .add(&d_feat_raw_, BE).add(&d_pooled_, BW).add(&d_pooled_in_, BW)
      .add(&d_stack_out_, size_t(B * T * W))
      .allocate(extra_);
  tok_.resize(size_t(B * T));
  eot_.resize(size_t(B));
}

const float* TextTower::forward(const ClipParams& p, const int32_t* tokens, int64_t B, ops::Prec prec,
                                bool normalize) {
  OC_CHECK(B > 0 && B <= B_max_, "text tower planned for batch <= {}, got {}", B_max_, B);
  B_ = B;
  const auto& t = cfg_.text;
  const int64_t ctx = t.context_length, W = t.width, E = cfg_.embed_dim, V = t.vocab_size;
  int64_t T = pool_positions(tokens, B);
  if (full_context_) T = ctx;
  T_ = T;
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(&tok_[size_t(b * T)], tokens + b * ctx, sizeof(int32_t) * size_t(T));
  BlockActs a0 = mem_.layer(0, B, T);
  be_->run(ops::TokenEmbedForwardArgs{.x = a0.x, .tokens = {tok_.data(), size_t(B * T)}, .wte = p.tok_emb,
                                      .wpe = p.t_pos, .B = B, .Tn = T, .C = W, .V = V});
  StackDims d = dims(B, T, W, t.heads, t.mlp_width(), t.layers, !t.no_causal_mask, block_act(cfg_), t.ln_eps, prec,
                     mem_, w16_, w8_, be_);
  stack_forward(p.t_blocks, mem_, d);
  be_->run(ops::GatherRowsForwardArgs{.out = pooled_in_, .inp = mem_.out(B, T), .idx = {eot_.data(), size_t(B)}, .B = B,
                                      .Tn = T, .C = W});
  be_->run(ops::LayerNormForwardArgs{.out = pooled_, .mean = fin_mean_, .rstd = fin_rstd_, .inp = pooled_in_,
                                     .weight = p.ln_final_w, .bias = p.ln_final_b, .N = B, .C = W, .eps = t.ln_eps});
  project_forward(p, B, prec);  // pooled_ -> feat_raw_
  if (!normalize) return feat_raw_;
  be_->run(ops::L2NormForwardArgs{.out = feat_, .norm = norm_, .inp = feat_raw_, .N = B, .C = E});
  return feat_;
}

void TextTower::backward(const ClipParams& p, const ClipParams& g, const float* d_feat, ops::Prec prec) {
  OC_CHECK(training_, "text tower was planned for inference; backward needs training activations");
  const int64_t B = B_, T = T_;
  const auto& t = cfg_.text;
  const int64_t W = t.width, E = cfg_.embed_dim, V = t.vocab_size;
  be_->run(ops::L2NormBackwardArgs{.dinp = d_feat_raw_, .dout = d_feat, .out = feat_, .norm = norm_, .N = B, .C = E});
  project_backward(p, g, B, prec);  // d_feat_raw_ -> d_pooled_
  be_->zero(d_pooled_in_, sizeof(float) * size_t(B * W));
  be_->run(ops::LayerNormBackwardArgs{.dinp = d_pooled_in_, .dweight = g.ln_final_w, .dbias = g.ln_final_b,
                                      .dout = d_pooled_, .inp = pooled_in_, .weight = p.ln_final_w, .mean = fin_mean_,
                                      .rstd = fin_rstd_, .N = B, .C = W});
  be_->zero(d_stack_out_, sizeof(float) * size_t(B * T * W));
  be_->run(ops::GatherRowsBackwardArgs{.dinp = d_stack_out_, .dout = d_pooled_in_, .idx = {eot_.data(), size_t(B)},
                                       .B = B, .Tn = T, .C = W});
  StackDims d = dims(B, T, W, t.heads, t.mlp_width(), t.layers, !t.no_causal_mask, block_act(cfg_), t.ln_eps, prec,
                     mem_, w16_, w8_, be_);
  stack_backward(p.t_blocks, g.t_blocks, mem_, d_stack_out_, d);
  be_->run(ops::TokenEmbedBackwardArgs{.dwte = g.tok_emb, .dwpe = g.t_pos, .dx = mem_.d_res(),
                                       .tokens = {tok_.data(), size_t(B * T)}, .B = B, .Tn = T, .C = W, .V = V});
}

}  // namespace oc
