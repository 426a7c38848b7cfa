#include "model/clip.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "core/check.h"
#include "core/log.h"
#include "core/profile.h"
#include "core/rng.h"
#include "model/params.h"
#include "ops/dnnl_info.h"
#include "ops/gemm_int8.h"

namespace oc {

Clip::Clip(ModelCfg cfg, ops::Backend& be)
    : cfg_(std::move(cfg)),
      be_(&be),
      table_(make_param_table(cfg_)),
      vision_(make_image_tower(cfg_, be)),
      text_(make_text_tower(cfg_, be)) {
  params_.bind(be, fmt::format("{} parameters", cfg_.name));
  grads_.bind(be, fmt::format("{} gradients", cfg_.name));
  params_.resize(table_.total, /*zero=*/true);
  p_ = bind_params(cfg_, table_, params_.data());
  vision_->bind(table_, params_.data(), nullptr);
  text_->bind(p_, nullptr);
}

void Clip::init(uint64_t seed) {
  init_params(cfg_, table_, *be_, params(), seed);  // params(): the bf16 copies are stale
  vision_->set_patch_dropout_seed(mix_seed(seed, 0x70617463));  // patch dropout draws follow the init seed
}

Precision Clip::checked_int8() const {
  if (const std::string why = vision_->int8_refusal(); !why.empty())
    OC_USER_ERROR("--precision int8: {} {}", cfg_.name, why);
  if (ops::has_int8(*be_)) return Precision::Int8;
  if (be_->name() != "cpu")
    OC_USER_ERROR("--precision int8: the {} backend has no int8 GEMMs; use --device cpu", be_->name());
  const Precision fallback = ops::native_bf16() ? Precision::AmpBf16 : Precision::Fp32;
  log::warn("--precision int8: this CPU has no VNNI (oneDNN dispatches to {}): running {} instead", ops::dnnl_isa(),
            precision_name(fallback));
  return fallback;
}

void Clip::set_precision(Precision p) {
  if (p == Precision::Int8) p = checked_int8();
  if (p == Precision::Int8 && training_)
    OC_USER_ERROR("--precision int8 is for inference only (embed, eval, serve, ...)");
  if (p != Precision::Int8) w8_.clear();
  vision_->set_int8_weights(p == Precision::Int8 ? &w8_ : nullptr);
  text_->set_int8_weights(p == Precision::Int8 ? &w8_.text() : nullptr);
  const bool replan = B_max_ > 0 && (p != Precision::Fp32) != bf16_acts();
  if (p != prec_) release_f32();  // prepared for the precision that was
  prec_ = p;
  if (!replan) return;
  if (training_) plan_training(B_max_, checkpoint_);
  else plan_inference(B_max_);
}

void Clip::set_int8_scales(std::shared_ptr<const Int8Scales> s) {
  if (s) {
    if (const std::string why = vision_->int8_refusal(); !why.empty())
      OC_USER_ERROR("int8 scales {}: {} {}", s->file, cfg_.name, why);
    if (s->model != cfg_.name)
      OC_USER_ERROR("int8 scales {} were calibrated for model '{}', not {}: run openclip quantize for this model",
                    s->file, s->model, cfg_.name);
    std::set<std::string> want;
    for (const std::string& w : int8_weight_names(table_, int8_sources(), params_.data())) {
      want.insert(int8_scale_name(w));
      if (!s->scale.count(int8_scale_name(w)))
        OC_USER_ERROR("int8 scales {}: no tensor {} (model {})", s->file, int8_scale_name(w), cfg_.name);
    }
    for (const auto& [name, v] : s->scale)
      if (!want.count(name))
        OC_USER_ERROR("int8 scales {}: tensor {} is not an int8 GEMM of {}", s->file, name, cfg_.name);
  }
  scales_ = std::move(s);
  w8_.clear();  // quantized again, with the new scales, when next encoded
  w8_stale_vision_ = w8_stale_text_ = true;
}

std::string Clip::precision_label() const {
  if (prec_ != Precision::Int8) return precision_name(prec_);
  if (!scales_) return "int8 dynamic";
  return fmt::format("int8 static ({})", scales_->file.empty() ? "calibrated in this process" : scales_->file);
}

void Clip::refresh_bf16(bool vision, bool text) {
  OC_PROFILE("bf16_weights");
  if (!w16_.planned()) {
    w16_.plan(table_, vision_->blocks(), p_.t_blocks, params_.data(), *be_);
    vision_->set_bf16_weights(&w16_.vision());
    text_->set_bf16_weights(&w16_.text());
  }
  // Weights in the GEMM kernel's own layout for inference only: ~10% faster forward GEMMs
  // (encode_image 67 -> 79 images/s at batch 64 on AMX), but in training no step-time change
  // could be measured (A/B within run-to-run noise, docs/BENCHMARKS.md) while the copy costs
  // 246 MiB at ViT-B-32 (the batch-256 RSS budget).
  w16_.refresh(vision, text, /*prepare=*/!training_);
  if (vision) w16_stale_vision_ = false;
  if (text) w16_stale_text_ = false;
}

Int8Sources Clip::int8_sources() const {
  return {.vision = &vision_->blocks(), .vision_patch = vision_->int8_patch_weight(), .text = &p_.t_blocks};
}

void Clip::refresh_int8(bool vision, bool text) {
  vision = vision && (w8_stale_vision_ || !w8_.has_vision());
  text = text && (w8_stale_text_ || !w8_.has_text());
  if (!vision && !text) return;
  w8_.build(table_, int8_sources(), params_.data(), *be_, vision, text, scales_.get());
  if (vision) w8_stale_vision_ = false;
  if (text) w8_stale_text_ = false;
}

namespace {
// f(weight, rows, cols) for every block's GEMM weight of `blocks` (shapes from the table).
template <class F>
void each_gemm_weight(const ParamTable& table, const float* base, const std::vector<BlockParams>& blocks, F f) {
  for (const BlockParams& b : blocks)
    for (const float* w : {b.in_w, b.out_w, b.fc_w, b.proj_w}) {
      const ParamInfo* info = nullptr;
      for (const ParamInfo& pi : table.params)
        if (base + pi.offset == w) info = &pi;
      OC_CHECK(info && info->shape.size() == 2, "fp32 weights: no matrix parameter at offset {}", w - base);
      f(w, int64_t(info->shape[0]), int64_t(info->shape[1]));
    }
}
}  // namespace

void Clip::prepare_f32(bool vision, bool text) {
  if (vision && !f32_prepared_vision_) {
    each_gemm_weight(table_, params_.data(), vision_->blocks(),
                     [&](const float* w, int64_t n, int64_t k) { be_->prepare_weight_f32(w, n, k); });
    f32_prepared_vision_ = true;
  }
  if (text && !f32_prepared_text_) {
    each_gemm_weight(table_, params_.data(), p_.t_blocks,
                     [&](const float* w, int64_t n, int64_t k) { be_->prepare_weight_f32(w, n, k); });
    f32_prepared_text_ = true;
  }
}

void Clip::release_f32() {
  auto release = [&](const float* w, int64_t, int64_t) { be_->release_weight_f32(w); };
  if (f32_prepared_vision_) each_gemm_weight(table_, params_.data(), vision_->blocks(), release);
  if (f32_prepared_text_) each_gemm_weight(table_, params_.data(), p_.t_blocks, release);
  f32_prepared_vision_ = f32_prepared_text_ = false;
}

void Clip::plan(int64_t B_max, bool training, bool checkpoint) {
  training_ = training;
  B_max_ = B_max;
  const TowerPlan tp{.B_max = B_max, .training = training, .checkpoint = checkpoint, .bf16_acts = bf16_acts()};
  vision_->plan(tp);
  text_->plan(tp);
}

void Clip::plan_training(int64_t B_max, bool checkpoint) {
  if (prec_ == Precision::Int8) OC_USER_ERROR("--precision int8 is for inference only (embed, eval, serve, ...)");
  release_f32();  // the optimizer writes the weights from now on
  checkpoint_ = checkpoint;
  if (grads_.size() != table_.total) {
    grads_.resize(table_.total, /*zero=*/true);
    g_ = bind_params(cfg_, table_, grads_.data());
    vision_->bind(table_, params_.data(), grads_.data());
    text_->bind(p_, &g_);
  }
  plan(B_max, true, checkpoint);
}

void Clip::plan_inference(int64_t B_max) { plan(B_max, false, false); }

Clip::Features Clip::forward(const float* images, const int32_t* tokens, int64_t B, ImagesIn in) {
  OC_CHECK(training_, "forward() keeps activations for backward: call plan_training first");
  OC_CHECK(in == ImagesIn::Host || takes_backend_images(), "{}: this image tower reads its images on the host",
           cfg_.name);
  const ops::Prec mp = matmul_prec(prec_);
  if (bf16_acts()) refresh_bf16(true, true);  // once per step: the optimizer has moved the weights
  Features f;
  f.image = vision_->forward(images, B, mp, {.normalize = true, .train = true, .in = in});
  f.text = text_->forward(tokens, B, mp);
  return f;
}

void Clip::backward(const float* d_image, const float* d_text) {
  const ops::Prec mp = matmul_prec(prec_);
  vision_->backward(d_image, mp);
  text_->backward(d_text, mp);
}

void Clip::encode_image(const float* images, int64_t B, float* out, bool normalize) {
  OC_CHECK(B_max_ > 0, "call plan_inference or plan_training before encode_image");
  const int64_t E = cfg_.embed_dim, S = cfg_.vision.image_size, img = 3 * S * S;
  if (prec_ == Precision::Int8)
    refresh_int8(true, false);
  else if (bf16_acts() && (training_ || w16_stale_vision_))
    refresh_bf16(true, false);
  if (!bf16_acts() && !training_) prepare_f32(true, false);
  for (int64_t b0 = 0; b0 < B; b0 += B_max_) {
    const int64_t n = std::min(B_max_, B - b0);
    const float* f = vision_->forward(images + b0 * img, n, matmul_prec(prec_), {.normalize = normalize});
    be_->copy_to_host(out + b0 * E, f, sizeof(float) * size_t(n * E));
  }
}

void Clip::encode_text(const int32_t* tokens, int64_t B, float* out, bool normalize) {
  OC_CHECK(B_max_ > 0, "call plan_inference or plan_training before encode_text");
  const int64_t E = cfg_.embed_dim, ctx = cfg_.text.context_length;
  if (prec_ == Precision::Int8)
    refresh_int8(false, true);
  else if (bf16_acts() && (training_ || w16_stale_text_))
    refresh_bf16(false, true);
  if (!bf16_acts() && !training_) prepare_f32(false, true);
  for (int64_t b0 = 0; b0 < B; b0 += B_max_) {
    const int64_t n = std::min(B_max_, B - b0);
    const float* f = text_->forward(tokens + b0 * ctx, n, matmul_prec(prec_), normalize);
    be_->copy_to_host(out + b0 * E, f, sizeof(float) * size_t(n * E));
  }
}

Clip::Memory Clip::memory() const {
  return {params_.mib() + w16_.mib() + w8_.mib(), grads_.mib(), vision_->mib() + text_->mib()};
}

}  // namespace oc
